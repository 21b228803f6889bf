// How many threads the correlator's parallel stages may use. --threads sets it through
// tbb::global_control, which this_task_arena::max_concurrency() does not see (it reports
// the arena's size, the machine's cores): a one-thread run took the many-thread paths,
// sizing per-thread buffers for two threads and copying the e2e text through chunks.
#pragma once

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>

namespace insert::correlate {

inline std::size_t parallelism() {
    const auto arena = static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
    const std::size_t allowed =
        tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
    return std::max<std::size_t>(1, std::min(arena, allowed));
}

}  // namespace insert::correlate
