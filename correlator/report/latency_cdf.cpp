#include "correlator/report/latency_cdf.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace insert::correlate::report {

namespace {

// splitmix64: a fixed sequence per application, so the sample depends only on the input.
uint64_t next_random(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

void LatencyCdf::add(const std::string& key, const std::string& label, bool complete,
                     const LatencySample& sample) {
    auto it = apps_.find(key);
    if (it == apps_.end()) {
        if (apps_.size() >= max_apps_) {
            ++apps_not_sampled_;
            return;
        }
        it = apps_.emplace(key, App{}).first;
        it->second.label = label;
    }
    App& app = it->second;
    if (!complete) {
        ++app.without_parts;
        return;
    }
    // Algorithm R: the i-th message replaces a random slot with probability reservoir / i.
    const uint64_t i = app.seen++;
    if (app.sample.size() < reservoir_) {
        app.sample.push_back(sample);
        return;
    }
    const uint64_t slot = next_random(app.rng) % (i + 1);
    if (slot < reservoir_) app.sample[slot] = sample;
}

std::vector<AppCdf> LatencyCdf::charts(std::size_t max_charts, std::size_t max_points) const {
    std::vector<const std::pair<const std::string, App>*> order;
    for (const auto& entry : apps_)
        if (entry.second.seen > 0) order.push_back(&entry);
    std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
        return a->second.seen > b->second.seen;  // map order (by key) breaks ties
    });
    if (order.size() > max_charts) order.resize(max_charts);
    std::vector<AppCdf> out;
    for (const auto* entry : order) {
        const App& app = entry->second;
        AppCdf cdf;
        cdf.key = entry->first;
        cdf.label = app.label;
        cdf.messages = app.seen;
        cdf.without_parts = app.without_parts;
        std::vector<LatencySample> sorted = app.sample;
        std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
            return std::tie(a.total_ns, a.net_ns, a.host_ns, a.completion_ns) <
                   std::tie(b.total_ns, b.net_ns, b.host_ns, b.completion_ns);
        });
        const std::size_t n = sorted.size();
        const std::size_t points = std::min(n, max_points);
        for (std::size_t k = 1; k <= points; ++k) {
            // Rank k/points of the sample; nearest rank: the smallest index with at least
            // that fraction at or below it.
            const std::size_t index = (k * n + points - 1) / points - 1;
            cdf.points.push_back(
                {100.0 * static_cast<double>(k) / static_cast<double>(points), sorted[index]});
        }
        out.push_back(std::move(cdf));
    }
    return out;
}

}  // namespace insert::correlate::report
