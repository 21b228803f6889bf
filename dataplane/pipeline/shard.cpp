#include "dataplane/pipeline/shard.hpp"

#include <algorithm>
#include <cstring>

namespace insert::pipeline {

namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86DD;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinQ = 0x88A8;
constexpr uint8_t kIpProtoUdp = 17;
constexpr std::size_t kEthHeader = 14;
constexpr std::size_t kVlanTag = 4;
constexpr std::size_t kMaxVlanTags = 2;  // same limit as the parser (SPEC section 1)
constexpr std::size_t kIpv4MinHeader = 20;
constexpr std::size_t kIpv6Header = 40;

inline uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

inline uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// splitmix64 finaliser: full avalanche, so the multiply-high index uses all key bits.
inline uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

inline uint64_t fold_v6(const uint8_t* p) {
    return mix(load64(p)) ^ load64(p + 8);
}

// Order the two address words so that A->B and B->A give the same key.
inline uint64_t unordered(uint64_t a, uint64_t b) {
    return mix(std::min(a, b) * 0x9E3779B97F4A7C15ull ^ std::max(a, b));
}

}  // namespace

std::optional<ShardPolicy> parse_shard_policy(std::string_view name) {
    if (name == "ip-pair") return ShardPolicy::ip_pair;
    if (name == "ip-pair-sport") return ShardPolicy::ip_pair_sport;
    return std::nullopt;
}

std::string_view shard_policy_name(ShardPolicy policy) {
    return policy == ShardPolicy::ip_pair ? "ip-pair" : "ip-pair-sport";
}

uint64_t shard_hash(std::span<const uint8_t> frame, ShardPolicy policy) noexcept {
    const uint8_t* p = frame.data();
    const std::size_t n = frame.size();
    if (n < kEthHeader) return 0;
    std::size_t off = 12;
    uint16_t ether_type = be16(p + off);
    for (std::size_t tags = 0;
         (ether_type == kEtherVlan || ether_type == kEtherQinQ) && tags < kMaxVlanTags; ++tags) {
        off += kVlanTag;
        if (off + 2 > n) return 0;
        ether_type = be16(p + off);
    }
    off += 2;

    uint64_t key;
    uint8_t proto;
    std::size_t l4;
    bool first_fragment = true;
    if (ether_type == kEtherIpv4) {
        if (off + kIpv4MinHeader > n) return 0;
        const uint8_t* ip = p + off;
        key = unordered(load32(ip + 12), load32(ip + 16));
        proto = ip[9];
        l4 = off + std::size_t{ip[0] & 0x0Fu} * 4;
        first_fragment = (be16(ip + 6) & 0x1FFF) == 0;
    } else if (ether_type == kEtherIpv6) {
        if (off + kIpv6Header > n) return 0;
        const uint8_t* ip = p + off;
        key = unordered(fold_v6(ip + 8), fold_v6(ip + 24));
        proto = ip[6];
        l4 = off + kIpv6Header;
    } else {
        return 0;
    }
    if (policy == ShardPolicy::ip_pair_sport && proto == kIpProtoUdp && first_fragment &&
        l4 + 2 <= n)
        key = mix(key ^ (uint64_t{be16(p + l4)} << 1 | 1));
    return key;
}

}  // namespace insert::pipeline
