// Scenario files (docs/insert-gen.md): strict JSON -> Scenario. Unknown keys, wrong types
// and out-of-range values are errors naming the JSON path, never silently ignored.
#pragma once

#include <optional>
#include <string>

#include "bench/gen/scenario.hpp"

namespace insert::gen {

std::optional<Scenario> scenario_from_json(const std::string& text, std::string& error);
std::optional<Scenario> load_scenario_file(const std::string& path, std::string& error);

}  // namespace insert::gen
