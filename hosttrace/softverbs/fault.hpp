// Fault injection for tests: decides, per sent packet, whether to drop it, send it late
// (after the next packet, or after a delay) or mark it ECN CE. Deterministic for a seed.
#pragma once

#include <cstdint>

#include "hosttrace/softverbs/config.hpp"

namespace insert::softverbs {

enum class FaultAction : uint8_t { send, drop, reorder, delay };

class FaultInjector {
  public:
    void configure(const Config& c, uint64_t seed);
    bool enabled() const { return enabled_; }
    FaultAction decide();
    bool mark_ce();

  private:
    double uniform();
    uint64_t state_ = 0x9E3779B97F4A7C15ull;
    bool enabled_ = false;
    double drop_ = 0, reorder_ = 0, delay_ = 0, ecn_ = 0;
};

}  // namespace insert::softverbs
