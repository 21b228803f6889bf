#include "correlator/join/part_stats.hpp"

#include <algorithm>
#include <bit>

namespace insert::correlate {

namespace {

constexpr unsigned kSubBits = 7;

uint64_t magnitude_bucket(uint64_t m) {
    if (m < (1u << kSubBits)) return m;
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(m));
    const unsigned shift = msb - kSubBits;
    const uint64_t sub = (m >> shift) & ((1u << kSubBits) - 1);
    return ((uint64_t{shift} + 1) << kSubBits) + sub;
}

uint64_t bucket_low(uint64_t b) {
    if (b < (1u << kSubBits)) return b;
    const unsigned shift = static_cast<unsigned>((b >> kSubBits) - 1);
    return ((uint64_t{1} << kSubBits) | (b & ((1u << kSubBits) - 1))) << shift;
}

uint64_t bucket_high(uint64_t b) {
    if (b < (1u << kSubBits)) return b;
    const unsigned shift = static_cast<unsigned>((b >> kSubBits) - 1);
    return bucket_low(b) + (uint64_t{1} << shift) - 1;
}

uint64_t magnitude(int64_t v) {
    return v < 0 ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v);
}

}  // namespace

// Non-negative values: key = bucket; negative: key = -(bucket + 1), so that keys sort as
// their values do.
int64_t PartStats::bucket_key(int64_t v) {
    const auto b = static_cast<int64_t>(magnitude_bucket(magnitude(v)));
    return v < 0 ? -(b + 1) : b;
}

int64_t PartStats::bucket_mid(int64_t key) {
    if (key >= 0) {
        const uint64_t b = static_cast<uint64_t>(key);
        return static_cast<int64_t>(bucket_low(b) + (bucket_high(b) - bucket_low(b)) / 2);
    }
    const uint64_t b = static_cast<uint64_t>(-(key + 1));
    return -static_cast<int64_t>(bucket_low(b) + (bucket_high(b) - bucket_low(b)) / 2);
}

void PartStats::add(int64_t v) {
    min_ = count_ ? std::min(min_, v) : v;
    max_ = count_ ? std::max(max_, v) : v;
    ++count_;
    if (count_ <= kExactLimit) {
        exact_.push_back(v);
        return;
    }
    if (!exact_.empty()) {
        for (int64_t x : exact_) ++buckets_[bucket_key(x)];
        exact_.clear();
        exact_.shrink_to_fit();
    }
    ++buckets_[bucket_key(v)];
}

void PartStats::merge(const PartStats& other) {
    if (other.count_ == 0) return;
    min_ = count_ ? std::min(min_, other.min_) : other.min_;
    max_ = count_ ? std::max(max_, other.max_) : other.max_;
    count_ += other.count_;
    if (buckets_.empty() && other.buckets_.empty() && count_ <= kExactLimit) {
        exact_.insert(exact_.end(), other.exact_.begin(), other.exact_.end());
        return;
    }
    for (int64_t x : exact_) ++buckets_[bucket_key(x)];
    exact_.clear();
    exact_.shrink_to_fit();
    for (int64_t x : other.exact_) ++buckets_[bucket_key(x)];
    for (const auto& [key, n] : other.buckets_) buckets_[key] += n;
}

std::optional<int64_t> PartStats::percentile(unsigned p) const {
    if (count_ == 0) return std::nullopt;
    const uint64_t rank = std::clamp<uint64_t>((uint64_t{p} * count_ + 99) / 100, 1, count_);
    if (buckets_.empty()) {
        // The rank's value alone: a selection, not a sort (a record asks for two ranks).
        const auto at = exact_.begin() + static_cast<std::ptrdiff_t>(rank - 1);
        std::nth_element(exact_.begin(), at, exact_.end());
        return *at;
    }
    uint64_t seen = 0;
    for (const auto& [key, n] : buckets_) {
        seen += n;
        if (seen >= rank) return std::clamp(bucket_mid(key), min_, max_);
    }
    return max_;
}

}  // namespace insert::correlate
