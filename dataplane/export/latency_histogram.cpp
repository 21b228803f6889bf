#include "dataplane/export/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace insert::exporter {

uint32_t LatencyHistogram::bucket_of(uint64_t ns) {
    // Values below 2^kSubBucketBits get a bucket each; above, an octave of 128 buckets.
    if (ns < (1u << kSubBucketBits)) return static_cast<uint32_t>(ns);
    const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(ns));
    const unsigned shift = msb - kSubBucketBits;
    const uint64_t sub = (ns >> shift) & ((1u << kSubBucketBits) - 1);
    return static_cast<uint32_t>(((shift + 1) << kSubBucketBits) + sub);
}

uint64_t LatencyHistogram::bucket_low(uint32_t b) {
    if (b < (1u << kSubBucketBits)) return b;
    const unsigned shift = (b >> kSubBucketBits) - 1;
    const uint64_t sub = b & ((1u << kSubBucketBits) - 1);
    return ((uint64_t{1} << kSubBucketBits) | sub) << shift;
}

uint64_t LatencyHistogram::bucket_high(uint32_t b) {
    if (b < (1u << kSubBucketBits)) return b;
    const unsigned shift = (b >> kSubBucketBits) - 1;
    return bucket_low(b) + (uint64_t{1} << shift) - 1;
}

void LatencyHistogram::count_bucket(uint32_t b) {
    if (buckets_.empty()) {
        first_bucket_ = b;
        buckets_.assign(1, 0);
    } else if (b < first_bucket_) {
        buckets_.insert(buckets_.begin(), first_bucket_ - b, 0);
        first_bucket_ = b;
    } else if (b - first_bucket_ >= buckets_.size()) {
        buckets_.resize(b - first_bucket_ + 1, 0);
    }
    ++buckets_[b - first_bucket_];
}

void LatencyHistogram::spill() {
    for (uint64_t v : exact_) count_bucket(bucket_of(v));
    exact_.clear();
    exact_.shrink_to_fit();
}

void LatencyHistogram::add(uint64_t ns) {
    ++count_;
    max_ = std::max(max_, ns);
    min_ = std::min(min_, ns);
    if (count_ <= kInline) {
        inline_[count_ - 1] = ns;
        return;
    }
    if (count_ <= kExactLimit) {
        if (exact_.empty()) {
            exact_.reserve(4 * kInline);  // one allocation for the next dozen samples
            exact_.assign(inline_.begin(), inline_.end());
        }
        exact_.push_back(ns);
        exact_sorted_ = false;
        return;
    }
    if (!exact_.empty()) spill();
    count_bucket(bucket_of(ns));
}

void LatencyHistogram::merge(const LatencyHistogram& o) {
    if (o.count_ == 0) return;
    if (o.buckets_.empty()) {
        // Exact samples: as if added one by one (spilling here when they no longer fit).
        if (o.count_ <= kInline)
            for (uint64_t i = 0; i < o.count_; ++i) add(o.inline_[i]);
        else
            for (uint64_t v : o.exact_) add(v);
        return;
    }
    // `other` holds buckets: this one's samples go to buckets too, then its counts add up.
    if (buckets_.empty()) {
        if (count_ <= kInline)
            for (uint64_t i = 0; i < count_; ++i) count_bucket(bucket_of(inline_[i]));
        else
            spill();
    }
    for (std::size_t i = 0; i < o.buckets_.size(); ++i) {
        if (o.buckets_[i] == 0) continue;
        const uint32_t b = o.first_bucket_ + static_cast<uint32_t>(i);
        count_bucket(b);
        buckets_[b - first_bucket_] += o.buckets_[i] - 1;
    }
    count_ += o.count_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
}

uint64_t LatencyHistogram::percentile(double p) const {
    if (count_ == 0) return 0;
    // Nearest rank: the smallest value whose rank r satisfies r >= p% of n.
    uint64_t rank = static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    if (buckets_.empty()) {
        if (count_ <= kInline) {
            std::array<uint64_t, kInline> sorted = inline_;
            std::sort(sorted.begin(), sorted.begin() + static_cast<long>(count_));
            return sorted[rank - 1];
        }
        // Sorted in place once for all the percentiles asked between two add()s (a qp
        // record asks for two): no copy, no allocation.
        if (!exact_sorted_) {
            std::sort(exact_.begin(), exact_.end());
            exact_sorted_ = true;
        }
        return exact_[rank - 1];
    }
    uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        seen += buckets_[i];
        if (seen >= rank) {
            const uint32_t bucket = first_bucket_ + static_cast<uint32_t>(i);
            const uint64_t mid =
                bucket_low(bucket) + (bucket_high(bucket) - bucket_low(bucket)) / 2;
            return std::clamp(mid, min_, max_);
        }
    }
    return max_;
}

}  // namespace insert::exporter
