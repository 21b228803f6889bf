// The `alert` and `congestion` records of the e2e truth (alert_truth.*, congestion_truth.*)
// as JSON lines, with docs/correlation.md sections 8 and 9's field names in their order.
// They are few and of any length (an episode lists every source application), so they are
// built as strings, not in JsonOut's fixed-size record slots.
#pragma once

#include <string>

#include "bench/gen/alert_truth.hpp"
#include "bench/gen/congestion_truth.hpp"

namespace insert::gen {

std::string alert_json(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
                       const AlertRecord& a);
std::string congestion_json(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
                            const CongestionRecord& c);
// `"alerts":{...}` (every kind) and `"congestion":N`, for the e2e summary.
std::string incident_counts_json(const AlertTruth& alerts, const CongestionTruth& congestion);

}  // namespace insert::gen
