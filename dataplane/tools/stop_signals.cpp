#include "dataplane/tools/stop_signals.hpp"

#include <atomic>
#include <csignal>

namespace insert::tools {

namespace {

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
// The handlers' state: a signal handler has no other way to reach the run it stops.
std::atomic<int> g_signal{0};
std::atomic<void (*)(void*)> g_stop{nullptr};
std::atomic<void*> g_target{nullptr};

void on_signal(int sig) {
    int none = 0;
    g_signal.compare_exchange_strong(none, sig);
    request_stop();
}

}  // namespace

void request_stop() {
    if (void (*stop)(void*) = g_stop.load()) stop(g_target.load());
}

void install_stop_signals(void (*stop)(void*), void* target) {
    g_signal.store(0);
    g_target.store(target);
    g_stop.store(stop);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kStopSignals) sigaction(s, &sa, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

void restore_stop_signals() {
    for (int s : kStopSignals) std::signal(s, SIG_DFL);
    g_stop.store(nullptr);
    g_target.store(nullptr);
}

int stop_signal() {
    return g_signal.load();
}

const char* signal_name(int sig) {
    switch (sig) {
        case SIGINT:
            return "SIGINT";
        case SIGTERM:
            return "SIGTERM";
        case SIGHUP:
            return "SIGHUP";
        case SIGQUIT:
            return "SIGQUIT";
        case SIGUSR1:
            return "SIGUSR1";
        case SIGUSR2:
            return "SIGUSR2";
        default:
            return nullptr;
    }
}

}  // namespace insert::tools
