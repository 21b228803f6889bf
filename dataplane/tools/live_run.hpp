// insert-dp inline and monitor: options, the checks before EAL, port and pipeline set-up,
// signals, live stats, and the orderly shutdown.
#pragma once

#include "dataplane/ports/source_config.hpp"

namespace insert::tools {

// Returns the process exit status (0 done, 2 bad options/configuration, 1 runtime failure).
int run_live(ports::PortMode mode, int argc, char** argv);

}  // namespace insert::tools
