// Writes the e2e truth (E2eTruth) as JSON Lines: the `e2e` records, the `alert` and
// `congestion` records (sections 8, 9; when given), then the `pair`, `app` (final) and
// `clock` records of docs/correlation.md section 6 with its field names, in its order, then
// one `e2e_summary` record with the summary's join counts (and alerts by kind, episodes). Fields
// named gen_* are the generator's annotations for humans (the message index, the true clock offset,
// the rule checks); tests/integration/compare_e2e.py ignores them.
#pragma once

#include <string>

#include "bench/gen/alert_truth.hpp"
#include "bench/gen/congestion_truth.hpp"
#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/json_out.hpp"

namespace insert::gen {

// What the e2e truth file holds: the join, and (optional) its alerts and episodes.
struct E2eOutputs {
    const E2eTruth& e2e;
    const AlertTruth* alerts = nullptr;
    const CongestionTruth* congestion = nullptr;
};

void write_e2e_records(const Scenario& sc, const HostTrace& trace, const E2eOutputs& truth,
                       JsonOut& out);
// False with `error` (and no file left) if the file cannot be written.
bool write_e2e_truth(const Scenario& sc, const HostTrace& trace, const E2eOutputs& truth,
                     const std::string& path, std::string& error);

}  // namespace insert::gen
