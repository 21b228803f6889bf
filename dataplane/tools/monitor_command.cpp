// insert-dp monitor: receive-only telemetry on mirror/SPAN/TAP ports.
#include "dataplane/tools/commands.hpp"
#include "dataplane/tools/live_run.hpp"

namespace insert::tools {

int run_monitor(int argc, char** argv) {
    return run_live(ports::PortMode::monitor, argc, argv);
}

}  // namespace insert::tools
