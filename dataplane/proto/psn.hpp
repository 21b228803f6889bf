// 24-bit PSN arithmetic (SPEC.md section 2).
#pragma once

#include <cstdint>

namespace insert::proto {

constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr uint32_t kPsnHalf = 1u << 23;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) {
    return (psn + n) & kPsnMask;
}
constexpr uint32_t psn_sub(uint32_t a, uint32_t b) {
    return (a - b) & kPsnMask;
}

// `a` is newer than `b` iff (a - b) mod 2^24 lies in [1, 2^23).
constexpr bool psn_newer(uint32_t a, uint32_t b) {
    const uint32_t d = psn_sub(a, b);
    return d != 0 && d < kPsnHalf;
}

// Not older: equal or newer.
constexpr bool psn_not_older(uint32_t a, uint32_t b) {
    return a == b || psn_newer(a, b);
}

}  // namespace insert::proto
