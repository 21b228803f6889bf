// Range checks for the tools' numeric options. CLI11's PositiveNumber lets NaN through
// (NaN <= 0 is false), and an interval of 1e-9 s made a replay write 78 GB: every duration
// option is checked to be a finite number within bounds that make sense for it.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace insert::tools {

// A validator for a number of seconds in [min_s, max_s] (finite).
inline CLI::Validator seconds_between(double min_s, double max_s) {
    return CLI::Validator(
        [min_s, max_s](std::string& text) -> std::string {
            double v = 0;
            try {
                std::size_t used = 0;
                v = std::stod(text, &used);
                if (used != text.size()) return "'" + text + "' is not a number";
            } catch (const std::exception&) {
                return "'" + text + "' is not a number";
            }
            if (!std::isfinite(v) || v < min_s || v > max_s) {
                char bounds[64];
                std::snprintf(bounds, sizeof bounds, "[%g, %g]", min_s, max_s);
                return "'" + text + "' is out of range: seconds in " + bounds;
            }
            return {};
        },
        "SECONDS", "seconds_between");
}

// Bounds shared by the commands (seconds).
constexpr double kMinInterval = 1e-4;        // --interval: a qp record per endpoint each time
constexpr double kMinIdleTimeout = 1e-6;     // --idle-timeout (capture time; tests use 5 us)
constexpr double kMaxDuration = 1e7;         // ~116 days: any duration-like option
constexpr double kMaxIdleTimeout = 86400.0;  // a day

}  // namespace insert::tools
