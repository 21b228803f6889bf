// Keys of the state tables: an endpoint (IP, QPN) and the host pairs used for pairing.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/proto/ip_address.hpp"
#include "dataplane/state/fixed_hash_map.hpp"

namespace insert::state {

inline uint64_t hash_ip(const proto::IpAddress& ip, uint64_t seed) {
    uint64_t a, b;
    std::memcpy(&a, ip.bytes.data(), 8);
    std::memcpy(&b, ip.bytes.data() + 8, 8);
    return mix64(a ^ mix64(b ^ seed));
}

struct EndpointKey {
    proto::IpAddress ip;
    uint32_t qpn = 0;
    friend bool operator==(const EndpointKey&, const EndpointKey&) = default;
};

struct EndpointKeyHash {
    std::size_t operator()(const EndpointKey& k) const noexcept { return hash_ip(k.ip, k.qpn); }
};

// One part of an endpoint: the packets it receives from one source IP (docs/semantics.md
// "Sources"). Request sequence state, messages and pairing are kept per part.
struct PartKey {
    EndpointKey endpoint;
    proto::IpAddress src;
    friend bool operator==(const PartKey&, const PartKey&) = default;
};

struct PartKeyHash {
    std::size_t operator()(const PartKey& k) const noexcept {
        return hash_ip(k.endpoint.ip, hash_ip(k.src, k.endpoint.qpn));
    }
};

constexpr uint32_t kPortKeyFlag = 0x10000;  // HostPairKey.sport of the per-port table

// Endpoints at `at` receiving from `from` (optionally from one UDP source port).
struct HostPairKey {
    proto::IpAddress at;
    proto::IpAddress from;
    uint32_t sport = 0;  // kPortKeyFlag | port for the per-port table, 0 for the per-IP one
    friend bool operator==(const HostPairKey&, const HostPairKey&) = default;
};

struct HostPairKeyHash {
    std::size_t operator()(const HostPairKey& k) const noexcept {
        return hash_ip(k.at, hash_ip(k.from, k.sport));
    }
};

}  // namespace insert::state
