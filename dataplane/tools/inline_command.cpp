// insert-dp inline: a bump in the wire between two ports, observing RoCE as it forwards.
#include "dataplane/tools/commands.hpp"
#include "dataplane/tools/live_run.hpp"

namespace insert::tools {

int run_inline(int argc, char** argv) {
    return run_live(ports::PortMode::inline_pair, argc, argv);
}

}  // namespace insert::tools
