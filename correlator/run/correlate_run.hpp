// One insert-correlate run: over inputs read to their end (ingest, join, views, records
// and the terminal report), or over live streams (correlator/live/). Returns the process exit
// status (0, or 2 with a message on stderr naming the input or output at fault).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "correlator/join/clock.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/run/run_options.hpp"

namespace insert::correlate {

class HostNames;

int run_correlate(const CorrelateOptions& options);

// Whether run_correlate() runs live: --listen, or an input that is not a regular file.
bool is_live_run(const CorrelateOptions& options);

// The clocks of the hosts that have at least one QP, by host name.
std::vector<std::pair<std::string, ClockEstimate>> host_clocks(
    const HostModel& model, const std::vector<ClockEstimate>& clocks, const HostNames& names);

}  // namespace insert::correlate
