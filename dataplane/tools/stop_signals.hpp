// Stopping a run by signal without losing output. Every signal that would end the process
// by default (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) instead asks the run to
// stop: the reader stops, workers and exporter drain, every record line and the summary
// are written whole, and the summary names the signal. Used by replay, inline, monitor and
// decode.
#pragma once

#include <atomic>

namespace insert::tools {

// Installs the handlers; on the first stop signal `stop(target)` is called, which must be
// async-signal-safe (atomics only). SIGPIPE is ignored: a closed output becomes a write
// error the tool reports.
void install_stop_signals(void (*stop)(void*), void* target);
// The same for anything with an async-signal-safe stop() (a PacketSource, a StopFlag).
template <typename T>
void install_stop_signals(T& target) {
    install_stop_signals([](void* t) { static_cast<T*>(t)->stop(); }, &target);
}
// Puts the default actions back (SIGPIPE stays ignored).
void restore_stop_signals();
// The first stop signal received since install_stop_signals(), or 0.
int stop_signal();
// "SIGINT", "SIGTERM"..., or nullptr for 0.
const char* signal_name(int sig);
// Runs the installed stop (SIGALRM for insert-dp --duration: a planned end, not a signal
// the summary names). Async-signal-safe.
void request_stop();

// A stop target for loops that poll a flag (decode).
struct StopFlag {
    std::atomic<bool> stopped{false};
    void stop() noexcept { stopped.store(true, std::memory_order_relaxed); }
    bool operator()() const noexcept { return stopped.load(std::memory_order_relaxed); }
};

}  // namespace insert::tools
