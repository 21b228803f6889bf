// The human summary of a run: what was read, what joined, each host's clock, and the
// applications with their latency split (microseconds, p50 / p99).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/output/views.hpp"

namespace insert::correlate {

struct RunReport {
    const IngestCounts* counts = nullptr;
    const JoinCounts* join = nullptr;
    const Views* views = nullptr;
    std::vector<std::pair<std::string, ClockEstimate>> clocks;  // hosts with QPs, by name
    std::size_t qps = 0;
    double wall_s = 0;
};

std::string terminal_report(const RunReport& report);

}  // namespace insert::correlate
