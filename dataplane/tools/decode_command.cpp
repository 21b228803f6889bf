// Being written in this session; replaced by the real command.
#include <cstdio>

#include "dataplane/tools/commands.hpp"

namespace insert::tools {
int run_decode(int, char**) {
    std::fprintf(stderr, "insert-dp decode: not built yet\n");
    return 1;
}
}  // namespace insert::tools
