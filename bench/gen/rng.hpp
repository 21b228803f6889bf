// Deterministic random numbers for the synthesizer. std:: distributions differ between
// standard libraries, so a scenario's output would depend on the toolchain; this
// SplitMix64/xoshiro256** pair and its own range mapping give the same bytes everywhere.
#pragma once

#include <cstdint>

namespace insert::gen {

class Rng {
  public:
    explicit Rng(uint64_t seed) {
        for (uint64_t& s : state_) s = splitmix(seed);
    }

    uint64_t next() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [lo, hi] (inclusive); hi >= lo. Lemire's multiply-shift (tiny bias is fine).
    uint64_t between(uint64_t lo, uint64_t hi) {
        const uint64_t span = hi - lo + 1;
        if (span == 0) return next();  // the full 64-bit range
        return lo + static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * span) >> 64);
    }

    // True with probability p (p <= 0 never draws, so adding an unused impairment does not
    // shift the random stream of a scenario).
    bool chance(double p) {
        if (p <= 0.0) return false;
        if (p >= 1.0) return true;
        return static_cast<double>(next() >> 11) * 0x1.0p-53 < p;
    }

  private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static uint64_t splitmix(uint64_t& x) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t state_[4];
};

}  // namespace insert::gen
