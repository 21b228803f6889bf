// The live modes' shared body (inline and monitor): options, the fail-fast checks before
// EAL, port and pipeline set-up, signals, live stats, and the orderly shutdown.
#pragma once

#include "dataplane/pipeline/port_source.hpp"

namespace insert::tools {

// Returns the process exit status (0 done, 2 bad options/configuration, 1 runtime failure).
int run_live(pipeline::PortMode mode, int argc, char** argv);

}  // namespace insert::tools
