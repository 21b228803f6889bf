// Network latency over time per tenant (cgroup): e2e records' net_ns in time bins, one
// histogram per (bin, series). The bin width starts at 1 ms and doubles (neighbouring
// bins merge) whenever the bins would span more than `max_bins`: memory is bounded by
// max_bins x series x the histogram, whatever the run's length or record count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace insert::correlate::report {

// Log-linear histogram of non-negative values: 16 sub-buckets per power of two (values
// within 1/16 of the bucket's lower bound); exact count and max.
class LogHistogram {
  public:
    void add(int64_t value);
    void merge(const LogHistogram& other);
    // Nearest-rank percentile: the bucket's midpoint, capped at the exact maximum (which is
    // the answer when the rank is the last).
    int64_t percentile(double p) const;
    uint64_t count() const { return count_; }
    int64_t max() const { return max_; }

  private:
    std::map<uint16_t, uint64_t> buckets_;
    uint64_t count_ = 0;
    int64_t max_ = 0;
};

struct SeriesPoint {
    int64_t t_start_ns = 0;  // the bin's start
    int64_t p99_ns = 0;
    uint64_t msgs = 0;
};

struct Series {
    std::string label;
    uint64_t msgs = 0;
    std::vector<SeriesPoint> points;  // bins with messages, in time order
};

class NetLatencySeries {
  public:
    // `max_series` tenants get a series of their own, in the order they first appear; the
    // rest share one ("other cgroups").
    NetLatencySeries(std::size_t max_series = 8, std::size_t max_bins = 400)
        : max_series_(max_series), max_bins_(max_bins) {}

    void add(uint64_t cgroup, const std::string& comm, int64_t t_ns, int64_t net_ns);
    // A `cgroup` record: the tenant's path, its series' label (ids alone otherwise).
    void name(uint64_t cgroup, std::string path) {
        if (paths_.size() < 4096) paths_.emplace(cgroup, std::move(path));
    }
    std::vector<Series> series() const;
    int64_t bin_ns() const { return bin_ns_; }

  private:
    struct Tenant {
        uint64_t cgroup = 0;
        bool other = false;
        uint64_t msgs = 0;
        std::vector<std::string> comms;  // the alphabetically first few, for the label
    };
    std::size_t series_of(uint64_t cgroup);
    void coarsen();

    std::size_t max_series_;
    std::size_t max_bins_;
    int64_t bin_ns_ = 1'000'000;
    std::vector<Tenant> tenants_;
    std::map<uint64_t, std::size_t> by_cgroup_;
    std::map<uint64_t, std::string> paths_;
    // bin index (t / bin_ns_, rounded down) -> series -> histogram
    std::map<int64_t, std::map<std::size_t, LogHistogram>> bins_;
};

}  // namespace insert::correlate::report
