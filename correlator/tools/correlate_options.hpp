// insert-correlate's command line into one validated configuration (run/run_options.hpp).
#pragma once

#include <string>

#include "correlator/run/run_options.hpp"

namespace insert::correlate {

// Returns -1 to go on, 0 after --help, 2 with `error` set (naming the option) otherwise.
int parse_correlate_options(int argc, char** argv, CorrelateOptions& out, std::string& error);

}  // namespace insert::correlate
