// One run of insert-trace: validates the targets, loads and attaches the tracer, then
// turns events into JSON Lines until stopped. Data-path probes are added on the fly as
// traced processes reveal their verbs contexts.
#pragma once

#include <atomic>
#include <string>

#include "hosttrace/trace_options.hpp"

namespace insert::hosttrace {

// Returns the process exit status: 0, or 2 with one line on stderr naming the problem.
// `stop` is polled between ring-buffer waits (set from a signal handler).
int run_trace_session(const TraceOptions& options, const std::atomic<bool>& stop);

}  // namespace insert::hosttrace
