// Latencies of one endpoint for nearest-rank percentiles (SPEC.md section 7). Exact while
// small (the common case in tests and for most QPs); beyond kExactLimit samples they move
// into a log-linear histogram with 128 sub-buckets per power of two, whose bucket
// midpoints are within 0.4% of every value they hold (SPEC allows 1%). Its counts are one
// array over the buckets from the smallest to the largest value seen: latencies of one
// endpoint (or one run) rarely span more than a few octaves, a few KB, and adding a sample
// is an increment instead of a walk down a tree (the run-wide histogram of the terminal
// summary takes every message of a replay).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace insert::exporter {

class LatencyHistogram {
  public:
    static constexpr std::size_t kExactLimit = 4096;
    // Most endpoints see a handful of messages: their samples stay in the object itself,
    // with no allocation and no second cache miss in the exporter.
    static constexpr std::size_t kInline = 4;
    static constexpr unsigned kSubBucketBits = 7;  // 128 sub-buckets per octave

    void add(uint64_t ns);
    // Adds every sample of `other`. The result does not depend on the order in which
    // histograms are merged: exact while all samples fit kExactLimit, else the buckets of all.
    void merge(const LatencyHistogram& other);
    uint64_t count() const { return count_; }
    uint64_t max() const { return max_; }
    uint64_t min() const { return min_; }
    // Smallest latency with at least p% of the samples at or below it (p in (0, 100]).
    uint64_t percentile(double p) const;

  private:
    static uint32_t bucket_of(uint64_t ns);
    static uint64_t bucket_low(uint32_t bucket);
    static uint64_t bucket_high(uint32_t bucket);  // inclusive
    void spill();
    void count_bucket(uint32_t bucket);

    std::array<uint64_t, kInline> inline_{};  // the samples while count_ <= kInline
    // All samples while kInline < count_ <= kExactLimit; percentile() sorts them.
    mutable std::vector<uint64_t> exact_;
    mutable bool exact_sorted_ = false;
    std::vector<uint64_t> buckets_;  // after spilling: counts of buckets [first_bucket_, ...)
    uint32_t first_bucket_ = 0;
    uint64_t count_ = 0;
    uint64_t max_ = 0;
    uint64_t min_ = UINT64_MAX;
};

}  // namespace insert::exporter
