// Software RSS: which worker a frame belongs to. Connection affinity (DESIGN.md
// "Sharding and state") needs both directions of a connection on one worker, so every
// policy hashes an *unordered* key: swapping source and destination gives the same worker.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace insert::pipeline {

enum class ShardPolicy : uint8_t {
    // Symmetric hash of the unordered IP pair (what a NIC's symmetric Toeplitz RSS gives).
    // Keeps CM MADs, `ip`/`sport` pairing candidates and every endpoint's peer on one
    // worker, which the engine's pairing rules need.
    ip_pair,
    // Adds the UDP source port. Correct only when both directions of a connection use the
    // same source port (mlx5's default); spreads one busy host pair over workers but can
    // split a connection (and its CM exchange) otherwise.
    ip_pair_sport,
};

std::optional<ShardPolicy> parse_shard_policy(std::string_view name);
std::string_view shard_policy_name(ShardPolicy policy);

// 64-bit symmetric flow hash of a raw Ethernet frame. Non-IP frames (and frames with more
// VLAN tags than RoCE may have) hash to 0 (worker 0); never reads outside `frame`. The
// headers are found by proto::walk_frame, not parse_frame(): the reader lcore only needs
// addresses (and the UDP source port), and the worker parses the frame fully anyway.
uint64_t shard_hash(std::span<const uint8_t> frame, ShardPolicy policy) noexcept;

// Maps a hash onto [0, workers) without a division (multiply-high, Lemire).
inline unsigned shard_index(uint64_t hash, unsigned workers) noexcept {
    return static_cast<unsigned>((static_cast<unsigned __int128>(hash) * workers) >> 64);
}

}  // namespace insert::pipeline
