// Host clock offsets from causality (SPEC 10 "Clocks", docs/correlation.md 5). Every
// matched message of a requester on host h bounds theta_h = host clock - observer clock:
// the post happened before the first packet reached the observer, and the poll that
// returned its completion after the acknowledgement passed it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace insert::correlate {

enum class ClockSource : uint8_t { option, same_clock, midpoint, lower, upper, none };
std::string_view clock_source_name(ClockSource s);

struct ClockBounds {
    bool has_lo = false;
    bool has_hi = false;
    int64_t lo = 0;
    int64_t hi = 0;
    uint64_t matches = 0;  // messages that bounded it

    // One matched message: host times of its post and poll (kNone: absent), observer times.
    void add(int64_t t_post, int64_t t_first, int64_t t_poll, int64_t t_ack);
    void merge(const ClockBounds& other);
};

struct ClockEstimate {
    ClockBounds bounds;
    int64_t offset = 0;
    ClockSource source = ClockSource::none;
    bool consistent = true;  // lo <= hi (or not both known)
};

struct ClockPolicy {
    bool same_clock = false;
    std::map<std::string, int64_t, std::less<>> offsets;  // --clock-offset HOST=NS
};

ClockEstimate estimate_clock(const ClockBounds& bounds, std::string_view host,
                             const ClockPolicy& policy);

}  // namespace insert::correlate
