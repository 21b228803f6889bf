// The latency CDF of each application, split into its parts: a bounded, deterministic
// sample of its messages (reservoir sampling with a fixed-seed generator: the same record
// stream gives the same page), sorted by total latency at the end and read at evenly
// spaced percentile ranks. Memory: at most `max_apps` x `reservoir` samples whatever the
// number of e2e records.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace insert::correlate::report {

struct LatencySample {
    int64_t total_ns = 0;
    int64_t host_ns = 0;
    int64_t net_ns = 0;
    int64_t completion_ns = 0;
};

// One point of an application's CDF: the message at `rank_pct` percent of the sorted
// sample (nearest rank), with its parts.
struct CdfPoint {
    double rank_pct = 0;
    LatencySample sample;
};

struct AppCdf {
    std::string key;             // the app record's identity (host, ip, pid, comm, cgroup)
    std::string label;           // for people: comm[pid] ip host
    uint64_t messages = 0;       // e2e records with every part
    uint64_t without_parts = 0;  // e2e records of the app missing a part (not charted)
    std::vector<CdfPoint> points;
};

class LatencyCdf {
  public:
    LatencyCdf(std::size_t max_apps = 256, std::size_t reservoir = 1024)
        : max_apps_(max_apps), reservoir_(reservoir) {}

    // An e2e record of application `key`; `complete` false when one part is null.
    void add(const std::string& key, const std::string& label, bool complete,
             const LatencySample& sample);

    // The `max_charts` applications with the most complete messages (then by key), each with
    // at most `max_points` points.
    std::vector<AppCdf> charts(std::size_t max_charts, std::size_t max_points) const;
    // Applications seen beyond max_apps (their messages are not sampled).
    uint64_t apps_not_sampled() const { return apps_not_sampled_; }

  private:
    struct App {
        std::string label;
        uint64_t seen = 0;
        uint64_t without_parts = 0;
        uint64_t rng = 0;
        std::vector<LatencySample> sample;
    };

    std::size_t max_apps_;
    std::size_t reservoir_;
    std::map<std::string, App> apps_;
    uint64_t apps_not_sampled_ = 0;
};

}  // namespace insert::correlate::report
