#include "correlator/report/time_bins.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace insert::correlate::report {

namespace {

constexpr int kSubBits = 4;  // 16 sub-buckets per power of two

uint16_t bucket_of(int64_t value) {
    const auto v = static_cast<uint64_t>(std::max<int64_t>(value, 0));
    if (v < (1u << kSubBits)) return static_cast<uint16_t>(v);
    const int exponent = 63 - std::countl_zero(v);  // >= kSubBits
    const uint64_t sub = (v >> (exponent - kSubBits)) & ((1u << kSubBits) - 1);
    return static_cast<uint16_t>(((exponent - kSubBits + 1) << kSubBits) + sub);
}

// [low, high) of a bucket.
std::pair<int64_t, int64_t> bucket_range(uint16_t b) {
    if (b < (1u << kSubBits)) return {b, b + 1};
    const int exponent = (b >> kSubBits) + kSubBits - 1;
    const uint64_t sub = b & ((1u << kSubBits) - 1);
    const uint64_t width = uint64_t{1} << (exponent - kSubBits);
    const uint64_t low = (uint64_t{1} << exponent) + sub * width;
    return {static_cast<int64_t>(low), static_cast<int64_t>(low + width)};
}

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

}  // namespace

void LogHistogram::add(int64_t value) {
    ++buckets_[bucket_of(value)];
    if (count_ == 0 || value > max_) max_ = value;
    ++count_;
}

void LogHistogram::merge(const LogHistogram& other) {
    for (const auto& [b, n] : other.buckets_) buckets_[b] += n;
    if (other.count_ && (count_ == 0 || other.max_ > max_)) max_ = other.max_;
    count_ += other.count_;
}

int64_t LogHistogram::percentile(double p) const {
    if (count_ == 0) return 0;
    const auto rank =
        static_cast<uint64_t>(std::max(1.0, std::ceil(p / 100.0 * static_cast<double>(count_))));
    if (rank >= count_) return max_;  // the largest value is known exactly
    uint64_t seen = 0;
    for (const auto& [b, n] : buckets_) {
        seen += n;
        if (seen >= rank) {
            const auto [low, high] = bucket_range(b);
            return std::min(max_, low + (high - 1 - low) / 2);
        }
    }
    return max_;
}

std::size_t NetLatencySeries::series_of(uint64_t cgroup) {
    const auto it = by_cgroup_.find(cgroup);
    if (it != by_cgroup_.end()) return it->second;
    std::size_t index;
    if (tenants_.size() < max_series_) {
        index = tenants_.size();
        tenants_.push_back({cgroup, false, 0, {}});
    } else {
        // One shared series for the rest, made when the first one beyond the limit comes.
        if (tenants_.size() == max_series_) tenants_.push_back({0, true, 0, {}});
        index = max_series_;
    }
    if (!tenants_[index].other || by_cgroup_.size() < 4096) by_cgroup_.emplace(cgroup, index);
    return index;
}

void NetLatencySeries::add(uint64_t cgroup, const std::string& comm, int64_t t_ns, int64_t net_ns) {
    const std::size_t s = series_of(cgroup);
    Tenant& tenant = tenants_[s];
    ++tenant.msgs;
    // The label's few names: the alphabetically first, not the first to come, so that the
    // label does not depend on the records' order (the bus's merged view).
    if (!tenant.other) {
        const auto at = std::lower_bound(tenant.comms.begin(), tenant.comms.end(), comm);
        if ((at == tenant.comms.end() || *at != comm) && at - tenant.comms.begin() < 3) {
            tenant.comms.insert(at, comm);
            if (tenant.comms.size() > 3) tenant.comms.pop_back();
        }
    }
    bins_[floor_div(t_ns, bin_ns_)][s].add(net_ns);
    // (Bins of 2^61 ns span any int64 time: no doubling beyond, whatever the records say.)
    while (bins_.size() > 1 && bin_ns_ < (int64_t{1} << 61) &&
           bins_.rbegin()->first - bins_.begin()->first >= static_cast<int64_t>(max_bins_))
        coarsen();
}

void NetLatencySeries::coarsen() {
    std::map<int64_t, std::map<std::size_t, LogHistogram>> merged;
    for (auto& [bin, cells] : bins_)
        for (auto& [s, h] : cells) merged[floor_div(bin, 2)][s].merge(h);
    bins_ = std::move(merged);
    bin_ns_ *= 2;
}

std::vector<Series> NetLatencySeries::series() const {
    std::vector<Series> out(tenants_.size());
    for (std::size_t s = 0; s < tenants_.size(); ++s) {
        const Tenant& t = tenants_[s];
        if (t.other) {
            out[s].label = "other cgroups";
        } else {
            const auto path = paths_.find(t.cgroup);
            out[s].label = path != paths_.end() ? path->second + ":"
                                                : "cgroup " + std::to_string(t.cgroup) + ":";
            for (std::size_t k = 0; k < t.comms.size(); ++k)
                out[s].label += (k ? ", " : " ") + t.comms[k];
        }
        out[s].msgs = t.msgs;
    }
    for (const auto& [bin, cells] : bins_)
        for (const auto& [s, h] : cells)
            out[s].points.push_back(
                {static_cast<int64_t>(std::max<__int128>(std::numeric_limits<int64_t>::min(),
                                                         static_cast<__int128>(bin) * bin_ns_)),
                 h.percentile(99), h.count()});
    return out;
}

}  // namespace insert::correlate::report
