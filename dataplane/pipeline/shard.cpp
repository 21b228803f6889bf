#include "dataplane/pipeline/shard.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/common/hash.hpp"
#include "dataplane/proto/frame_walk.hpp"

namespace insert::pipeline {

namespace {

using common::kGoldenRatio64;
using common::mix64;

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

inline uint64_t fold_v6(const uint8_t* p) {
    return mix64(load64(p)) ^ load64(p + 8);
}

// Order the two address words so that A->B and B->A give the same key.
inline uint64_t unordered(uint64_t a, uint64_t b) {
    return mix64(std::min(a, b) * kGoldenRatio64 ^ std::max(a, b));
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
    const proto::FrameWalk w = proto::walk_frame(frame);
    // Frames the parser calls non-RoCE for their tags (SPEC.md section 1) hash to 0, as
    // non-IP frames do.
    if (w.tags > proto::kMaxVlanTags) return 0;
    const uint8_t* ip = frame.data() + w.l3_at;
    uint64_t key;
    if (w.ipv4)
        key = unordered(load32(ip + 12), load32(ip + 16));
    else if (w.ipv6)
        key = unordered(fold_v6(ip + 8), fold_v6(ip + 24));
    else
        return 0;
    if (policy == ShardPolicy::ip_pair_sport && w.udp)
        key = mix64(key ^ (uint64_t{proto::load_be16(frame.data() + w.l4_at)} << 1 | 1));
    return key;
}

}  // namespace insert::pipeline
