// CLOCK_REALTIME in ns: the clock insert-dp anchors its timestamps to and insert-trace's
// wall_ns, so an attacker's times can be compared with both.
#pragma once

#include <cstdint>
#include <ctime>

namespace insert::attack {

inline uint64_t wall_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace insert::attack
