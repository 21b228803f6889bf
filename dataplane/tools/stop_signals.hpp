// Stopping a run by signal without losing output. Every signal that would end the process
// by default (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) instead asks the run to
// stop: the reader stops, workers and exporter drain, every record line and the summary
// are written whole, and the summary names the signal. Used by replay, inline, monitor and
// decode.
#pragma once

namespace insert::tools {

// Installs the handlers; `stop` (async-signal-safe: atomics only) is called on the first
// signal. SIGPIPE is ignored: a closed output becomes a write error the tool reports.
void install_stop_signals(void (*stop)());
// Puts the default actions back (SIGPIPE stays ignored).
void restore_stop_signals();
// The first stop signal received since install_stop_signals(), or 0.
int stop_signal();
// "SIGINT", "SIGTERM"..., or nullptr for 0.
const char* signal_name(int sig);

}  // namespace insert::tools
