// A synthetic RoCEv2 workload for benchmarks and pipeline tests, built with the proto
// builder: `endpoints / 2` RC connections between `hosts` IPs, each message on a random
// connection, 1 KB path MTU, a mix of WRITE (40%), SEND (30%), READ (20%, request and
// responses) and FETCH_ADD (10%), each answered (ACK, READ responses, ATOMIC ACK). Every
// endpoint receives packets: the responder gets the requests, the requester the answers.
// Deterministic for a seed. (The lead may switch benchmarks to insert-gen's models.)
//
// Two shapes (docs/performance.md, "The workload's two shapes"):
// - small messages, one at a time (the default): WRITEs of 1-4 packets, SENDs and READs of
//   1-2, each message's packets back to back - a message and a record every ~3 packets,
//   the engine's heaviest per-packet load;
// - line rate (`max_message_packets` 64, `active` 64): messages up to 64 packets (WRITE;
//   SEND and READ up to 32), 64 of them on the wire at once with their packets interleaved
//   - mostly full 1 KB frames, what "one 100 GbE port at 1 KB MTU, ~11 Mpps" carries.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace insert::workload {

struct WorkloadSpec {
    uint32_t endpoints = 1000;  // rounded down to an even number (two per connection)
    uint32_t hosts = 256;
    uint64_t messages = 100'000;
    uint32_t mtu = 1024;
    uint64_t seed = 1;
    uint64_t start_ns = 1'700'000'000'000'000'000ull;
    uint64_t gap_ns = 100;  // between frames
    // WRITEs of 1..this many packets (uniform), SENDs and READs of 1..half as many.
    uint32_t max_message_packets = 4;
    // Messages on the wire at once (on distinct connections), packets interleaved one from
    // each in turn; 1: each message's packets back to back.
    uint32_t active = 1;
};

// Calls `emit(ts_ns, frame)` for every frame, in order.
using FrameSink = std::function<void(uint64_t ts_ns, std::span<const uint8_t> frame)>;
void generate_workload(const WorkloadSpec& spec, const FrameSink& emit);

// Frames kept in memory with only their headers stored: each frame owns a 128-byte slot
// holding everything up to its payload, and its (unread) payload bytes overlap the next
// slots. Workers read headers only (the parser never touches payload or ICRC), so this
// is what a NIC hands a CPU, at 1/8 of the memory: 1M endpoints fit in RAM.
struct CompactWorkload {
    static constexpr std::size_t kSlot = 128;
    std::vector<uint8_t> bytes;        // slots, plus a tail for the last frames' payload
    std::size_t first = 0;             // where the first slot starts: on a cache line
    std::vector<uint32_t> lengths;     // frame lengths
    std::vector<uint64_t> timestamps;  // ns
    std::size_t frames() const { return lengths.size(); }
    const uint8_t* frame(std::size_t i) const { return bytes.data() + first + i * kSlot; }
};
CompactWorkload build_compact_workload(const WorkloadSpec& spec);

}  // namespace insert::workload
