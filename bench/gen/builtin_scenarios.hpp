// The named scenarios of `insert-gen --list-scenarios` (docs/insert-gen.md describes each).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/gen/scenario.hpp"

namespace insert::gen {

struct ScaleOptions {
    double scale = 1.0;    // multiplies message and connection counts (tests use < 1)
    uint64_t qps = 0;      // `large`: QPs (two per connection); 0 = 100,000
    uint64_t packets = 0;  // `large`: approximate packet count; 0 = 1,000,000
};

const std::vector<std::string>& builtin_names();
std::optional<Scenario> builtin_scenario(const std::string& name, const ScaleOptions& opts = {});

}  // namespace insert::gen
