#include "hosttrace/softverbs/fault.hpp"

namespace insert::softverbs {

void FaultInjector::configure(const Config& c, uint64_t seed) {
    drop_ = c.drop;
    reorder_ = c.reorder;
    delay_ = c.delay;
    ecn_ = c.ecn;
    enabled_ = drop_ > 0 || reorder_ > 0 || delay_ > 0 || ecn_ > 0;
    state_ = seed ? seed : 0x9E3779B97F4A7C15ull;
}

// xorshift64*: fast, and reproducible across runs for a given SOFTVERBS_SEED.
double FaultInjector::uniform() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<double>((state_ * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}

FaultAction FaultInjector::decide() {
    if (!enabled_) return FaultAction::send;
    const double u = uniform();
    if (u < drop_) return FaultAction::drop;
    if (u < drop_ + reorder_) return FaultAction::reorder;
    if (u < drop_ + reorder_ + delay_) return FaultAction::delay;
    return FaultAction::send;
}

bool FaultInjector::mark_ce() {
    return ecn_ > 0 && uniform() < ecn_;
}

}  // namespace insert::softverbs
