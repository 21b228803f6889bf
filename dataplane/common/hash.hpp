// The one 64-bit hash finaliser of the project (splitmix64's): full avalanche, so every key
// bit moves every output bit - what both a power-of-two table index (the low bits) and a
// multiply-high worker index (the high bits) need. Keys of several words are folded into
// one word with it, a word at a time.
#pragma once

#include <cstdint>

namespace insert::common {

constexpr uint64_t mix64(uint64_t h) {
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

// 2^64 divided by the golden ratio: multiplying by it spreads a key's low bits (QPNs,
// ports) into the high bits (Fibonacci hashing).
constexpr uint64_t kGoldenRatio64 = 0x9E3779B97F4A7C15ull;

}  // namespace insert::common
