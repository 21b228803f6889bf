// insert-dp's /metrics (--http; docs/live.md, "Metrics"): the Prometheus text of the counters
// the /insert/* telemetry commands report, read the same way (LiveStats: totals, ports,
// workers, offload), so that the two never disagree.
#pragma once

#include <string>
#include <string_view>

#include "dataplane/live/telemetry.hpp"

namespace insert::live {

// The metrics of `stats` (nullptr: no pipeline running - only insert_dp_info and
// insert_dp_running 0). `mode`: inline or monitor; `version`: the program's version.
std::string prometheus_metrics(const LiveStats* stats, std::string_view mode,
                               std::string_view version);

// The metrics of what is published now (read_published), from any thread.
std::string published_metrics(std::string_view mode, std::string_view version);

}  // namespace insert::live
