// Writes the e2e truth (E2eTruth) as JSON Lines: the `e2e`, `app` (final), `clock` and
// `pair` records of docs/correlation.md section 6 with its field names, in its order, then
// one `e2e_summary` record with the summary's join counts. Fields named gen_* are the
// generator's annotations for humans (the message index, the true clock offset, the rule
// checks); tests/integration/compare_e2e.py ignores them.
#pragma once

#include <string>

#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/json_out.hpp"

namespace insert::gen {

void write_e2e_records(const Scenario& sc, const HostTrace& trace, const E2eTruth& truth,
                       JsonOut& out);
// False with `error` (and no file left) if the file cannot be written.
bool write_e2e_truth(const Scenario& sc, const HostTrace& trace, const E2eTruth& truth,
                     const std::string& path, std::string& error);

}  // namespace insert::gen
