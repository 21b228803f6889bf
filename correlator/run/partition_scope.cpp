#include "correlator/run/partition_scope.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/common/record_route.hpp"

namespace insert::correlate {

namespace {

constexpr std::size_t kMaxAddresses = 1 << 16;

// insert-trace's clock heartbeat: `{"type":"tick", ...}` (the type comes first).
bool is_tick(std::string_view line) {
    bool tick = false;
    for_each_member(line, [&tick](const JsonMember& m) {
        if (m.key != "type") return true;
        tick = m.string && m.value == "tick";
        return false;
    });
    return tick;
}

}  // namespace

std::size_t PartitionScope::Hash::operator()(const std::array<uint8_t, 16>& b) const {
    uint64_t lo = 0, hi = 0;
    std::memcpy(&lo, b.data(), 8);
    std::memcpy(&hi, b.data() + 8, 8);
    return static_cast<std::size_t>((lo * 0x9E3779B97F4A7C15ull) ^ hi);
}

bool PartitionScope::load(const BusOptions& options, std::string& error) {
    if (!options.hosts.empty() && !hosts_.load(options.hosts, error)) {
        error = "--nats-hosts " + error;
        return false;
    }
    partitions_ =
        std::make_unique<HostPartitions>(options.partitions, hosts_.size() ? &hosts_ : nullptr);
    owned_.assign(options.partitions, false);
    for (unsigned k : options.owned) owned_[k] = true;
    owned_count_ = static_cast<std::size_t>(std::count(owned_.begin(), owned_.end(), true));
    first_owned_ =
        static_cast<unsigned>(std::find(owned_.begin(), owned_.end(), true) - owned_.begin());
    return true;
}

bool PartitionScope::takes(std::string_view line, unsigned k) const {
    if (owned_count_ == 1) return true;  // it came on the one partition the instance has
    const RecordRoute route = route_record(line, *partitions_);
    if (route.every) return k == first_owned_ || is_tick(line);
    // The first of the instance's partitions the record goes to (the one it came on, if the
    // producer routed it otherwise: a producer with another hosts file).
    unsigned first = k;
    for (unsigned i = 0; i < route.count; ++i)
        if (route.partition[i] < owned_.size() && owned_[route.partition[i]])
            first = std::min(first, route.partition[i]);
    return first == k;
}

bool PartitionScope::owns(const Ip& ip) {
    if (owned_count_ == owned_.size()) return true;
    if (const auto it = owns_.find(ip.bytes); it != owns_.end()) return it->second;
    if (owns_.size() >= kMaxAddresses) owns_.clear();
    const bool own = owned_[partitions_->of_ip(ip.to_string())];
    owns_.emplace(ip.bytes, own);
    return own;
}

}  // namespace insert::correlate
