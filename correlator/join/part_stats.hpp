// Nearest-rank percentiles of one latency part of one application (docs/correlation.md 6:
// host_ns, net_ns, completion_ns, total_ns). Parts can be negative when a host's clock
// bounds are inconsistent, so this takes signed values. Exact while small; beyond
// kExactLimit samples a log-linear histogram (128 sub-buckets per power of two: bucket
// midpoints within 0.4% of their values, SPEC allows 1%) keeps memory bounded on an
// endless live input. The rank is integer arithmetic: ceil(p * n / 100).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace insert::correlate {

class PartStats {
  public:
    static constexpr std::size_t kExactLimit = 4096;

    void add(int64_t v);
    // Adds every sample of `other` (exact while both together stay within kExactLimit).
    void merge(const PartStats& other);
    uint64_t count() const { return count_; }
    // p in 1..100; nullopt without samples.
    std::optional<int64_t> percentile(unsigned p) const;
    std::optional<int64_t> max() const {
        return count_ ? std::optional<int64_t>(max_) : std::nullopt;
    }

  private:
    static int64_t bucket_key(int64_t v);
    static int64_t bucket_mid(int64_t key);

    mutable std::vector<int64_t> exact_;   // reordered by percentile()
    std::map<int64_t, uint64_t> buckets_;  // after spilling: key -> count, in value order
    uint64_t count_ = 0;
    int64_t min_ = 0;
    int64_t max_ = 0;
};

}  // namespace insert::correlate
