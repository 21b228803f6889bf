// Writes the ground truth as one JSON document (docs/insert-gen.md "Truth file"): SPEC 7
// `msg` records, final `qp` records and the `summary`, one record per line.
#pragma once

#include <cstdint>
#include <string>

#include "bench/gen/truth.hpp"

namespace insert::gen {

struct TruthFileInfo {
    std::string scenario;
    uint64_t seed = 0;
};

// Nearest-rank percentile (SPEC 7): the smallest value with at least p% at or below it.
uint64_t nearest_rank(const std::vector<uint64_t>& sorted, unsigned percent);

bool write_truth_json(const Scenario& scenario, const TruthObserver& truth,
                      const TruthFileInfo& info, const std::string& path, std::string& error);

}  // namespace insert::gen
