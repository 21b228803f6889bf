// Lookups from the wire's view of a QP to host QP incarnations (docs/correlation.md 3):
// by endpoint (ip, qpn) and by connection (ip, peer ip, peer qpn), each list in creation
// order, and the incarnation a message belongs to at a given host time.
#pragma once

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "correlator/join/host_model.hpp"

namespace insert::correlate {

struct EndpointKey {
    Ip ip;
    uint32_t qpn = 0;
    friend bool operator==(const EndpointKey&, const EndpointKey&) = default;
};

struct PeerKey {
    Ip ip;
    Ip peer_ip;
    uint32_t dest_qpn = 0;
    friend bool operator==(const PeerKey&, const PeerKey&) = default;
};

inline uint64_t hash_ip(const Ip& ip) {
    uint64_t a, b;
    std::memcpy(&a, ip.bytes.data(), 8);
    std::memcpy(&b, ip.bytes.data() + 8, 8);
    return (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
}

struct EndpointKeyHash {
    std::size_t operator()(const EndpointKey& k) const {
        return hash_ip(k.ip) ^ (uint64_t{k.qpn} * 0x165667B19E3779F9ull);
    }
};

struct PeerKeyHash {
    std::size_t operator()(const PeerKey& k) const {
        return hash_ip(k.ip) ^ (hash_ip(k.peer_ip) >> 1) ^
               (uint64_t{k.dest_qpn} * 0x165667B19E3779F9ull);
    }
};

struct IpHash {
    std::size_t operator()(const Ip& ip) const { return hash_ip(ip); }
};

class QpIndex {
  public:
    explicit QpIndex(const HostModel& model);

    // Incarnation indexes (into HostModel::qps) in creation order; empty if none.
    const std::vector<uint32_t>& at_endpoint(const Ip& ip, uint32_t qpn) const;
    const std::vector<uint32_t>& with_peer(const Ip& ip, const Ip& peer, uint32_t qpn) const;
    // The host whose QPs use this IP, or -1 (not a traced host).
    int64_t host_of(const Ip& ip) const;

    // The only candidate; else the one alive at host time t, else the latest created
    // before t, else -1.
    int64_t pick(const std::vector<uint32_t>& candidates, int64_t t) const;

  private:
    const HostModel& model_;
    std::unordered_map<EndpointKey, std::vector<uint32_t>, EndpointKeyHash> by_endpoint_;
    std::unordered_map<PeerKey, std::vector<uint32_t>, PeerKeyHash> by_peer_;
    std::unordered_map<Ip, uint32_t, IpHash> host_by_ip_;
    std::vector<uint32_t> empty_;
};

}  // namespace insert::correlate
