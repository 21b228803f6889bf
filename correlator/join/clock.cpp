#include "correlator/join/clock.hpp"

#include <algorithm>

#include "correlator/input/records.hpp"

namespace insert::correlate {

std::string_view clock_source_name(ClockSource s) {
    switch (s) {
        case ClockSource::option:
            return "option";
        case ClockSource::same_clock:
            return "same_clock";
        case ClockSource::midpoint:
            return "midpoint";
        case ClockSource::lower:
            return "lower";
        case ClockSource::upper:
            return "upper";
        case ClockSource::none:
            break;
    }
    return "none";
}

void ClockBounds::add(int64_t t_post, int64_t t_first, int64_t t_poll, int64_t t_ack) {
    ++matches;
    // Post before the first packet at the observer: theta >= t_post - t_first.
    const int64_t low = t_post - t_first;
    lo = has_lo ? std::max(lo, low) : low;
    has_lo = true;
    // Poll after the acknowledgement at the observer: theta <= t_poll - t_ack.
    if (t_poll != kNone && t_ack != kNone) {
        const int64_t high = t_poll - t_ack;
        hi = has_hi ? std::min(hi, high) : high;
        has_hi = true;
    }
}

void ClockBounds::merge(const ClockBounds& o) {
    matches += o.matches;
    if (o.has_lo) {
        lo = has_lo ? std::max(lo, o.lo) : o.lo;
        has_lo = true;
    }
    if (o.has_hi) {
        hi = has_hi ? std::min(hi, o.hi) : o.hi;
        has_hi = true;
    }
}

ClockEstimate estimate_clock(const ClockBounds& b, std::string_view host,
                             const ClockPolicy& policy) {
    ClockEstimate e;
    e.bounds = b;
    e.consistent = !(b.has_lo && b.has_hi && b.lo > b.hi);
    if (const auto it = policy.offsets.find(host); it != policy.offsets.end()) {
        e.offset = it->second;
        e.source = ClockSource::option;
    } else if (policy.same_clock) {
        e.offset = 0;
        e.source = ClockSource::same_clock;
    } else if (b.has_lo && b.has_hi) {
        // lo + floor((hi - lo) / 2): an empty intersection (lo > hi) takes the same formula,
        // and the clock record says it is inconsistent.
        const int64_t span = b.hi - b.lo;
        e.offset = b.lo + (span >= 0 ? span / 2 : -((-span + 1) / 2));
        e.source = ClockSource::midpoint;
    } else if (b.has_lo) {
        e.offset = b.lo;
        e.source = ClockSource::lower;
    } else if (b.has_hi) {
        e.offset = b.hi;
        e.source = ClockSource::upper;
    }
    return e;
}

}  // namespace insert::correlate
