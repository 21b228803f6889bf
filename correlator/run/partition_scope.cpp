#include "correlator/run/partition_scope.hpp"

#include <algorithm>
#include <cstring>

namespace insert::correlate {

namespace {

constexpr std::size_t kMaxAddresses = 1 << 16;

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
    every_ = std::find(owned_.begin(), owned_.end(), false) == owned_.end();
    return true;
}

bool PartitionScope::owns(const Ip& ip) {
    if (every_) return true;
    // No address (a QP whose GID the tracer did not see): no partition's, so that no join
    // claims its host by it - the host's clock is its addressed QPs' partition's.
    if (ip.bytes == std::array<uint8_t, 16>{}) return false;
    if (const auto it = owns_.find(ip.bytes); it != owns_.end()) return it->second;
    if (owns_.size() >= kMaxAddresses) owns_.clear();
    const bool own = owned_[partitions_->of_ip(ip.to_string())];
    owns_.emplace(ip.bytes, own);
    return own;
}

}  // namespace insert::correlate
