// The human summary of a run: what was read, what joined, each host's clock, and the
// applications with their latency split (microseconds, p50 / p99).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "correlator/output/record_sink.hpp"
#include "correlator/output/views.hpp"
#include "correlator/usecases/congestion.hpp"

namespace insert::correlate {

// A name from the input (comm, host) as the terminal may show it: a process chooses its
// comm, and control characters in it (ESC sequences, carriage returns, C1 controls) would
// otherwise rewrite the operator's screen. Each becomes \xNN.
std::string terminal_text(std::string_view name);

// One alert as the report and a live run's log show it (no newline).
std::string alert_line(const Alert& alert);
// A congestion episode: its line, then its contributors' and victims' lines.
std::string episode_lines(const CongestionEpisode& episode);

std::string terminal_report(const SummaryCounts& summary, const AppAggregator& apps,
                            const std::vector<std::pair<std::string, ClockEstimate>>& clocks,
                            const std::vector<Alert>& alerts,
                            const std::vector<CongestionEpisode>& episodes);

}  // namespace insert::correlate
