// insert-correlate's command line: one validated configuration struct.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "correlator/join/clock.hpp"

namespace insert::correlate {

struct CorrelateOptions {
    std::vector<std::string> inputs;  // files, "-" (stdin)
    std::string records;              // JSON Lines output: file, "-" (stdout) or empty (none)
    unsigned threads = 0;             // 0: every CPU
    ClockPolicy clock;
    bool quiet = false;  // no terminal report
};

// Returns -1 to go on, 0 after --help, 2 with `error` set (naming the option) otherwise.
int parse_correlate_options(int argc, char** argv, CorrelateOptions& out, std::string& error);

}  // namespace insert::correlate
