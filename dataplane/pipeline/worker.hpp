// One worker lcore: run to completion over its queue of the packet source. Per burst of
// up to 32: parse every frame, hand the RoCE ones to the engine in order (which prefetches
// their state a few packets ahead), count the rest by verdict, free the mbufs in one call.
// No lock, allocation, exception, syscall or log line per packet.
#pragma once

#include <rte_common.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/engine.hpp"

namespace insert::pipeline {

// Single writer (the worker), relaxed loads from any thread (stats, summary).
struct WorkerCounters {
    std::atomic<uint64_t> frames{0};  // every frame the worker received (the shard balance)
    std::atomic<uint64_t> roce{0};
    std::atomic<uint64_t> non_roce{0};
    std::atomic<uint64_t> malformed[proto::kMalformedReasons] = {};  // by proto::Malformed
    std::atomic<uint64_t> bursts{0};
    std::atomic<uint64_t> busy_cycles{0};  // TSC cycles from non-empty polls to the next poll
    std::atomic<uint64_t> cpu_ns{0};       // thread CPU time of the loop, set when it ends
    std::atomic<uint64_t> reports{0};      // Engine::report() calls (--interval)
    std::atomic<uint64_t> ticks{0};        // Engine::tick() calls (idle eviction)
};

struct WorkerConfig {
    uint64_t interval_ns = 0;  // periodic qp reports, in capture time; 0 = none
    uint64_t tick_ns = 0;      // idle-eviction housekeeping period, in capture time; 0 = none
    BackoffPolicy idle;        // waiting on an empty source (live ports: kLivePollBackoff)
};

// Everything one worker touches, on its own cache lines, fetched once by the loop.
struct alignas(RTE_CACHE_LINE_SIZE) WorkerContext {
    static constexpr unsigned kBurst = 32;

    unsigned index = 0;  // worker number = source queue
    PacketSource* source = nullptr;
    state::Engine* engine = nullptr;
    MbufTimestamp timestamp;
    WorkerConfig config;
    WorkerCounters counters;
    std::atomic<bool> finished{false};  // engine finished, every record pushed
    uint64_t report_next = 0;           // next --interval boundary (0: before the first packet)
    uint64_t tick_next = 0;             // next housekeeping boundary
    uint64_t window_next = 0;           // next whole second: event windows close there

    // Scratch of the current burst.
    std::array<proto::ParsedPacket, kBurst> parsed;
    std::array<uint64_t, kBurst> ts{};
    std::array<uint8_t, kBurst> roce{};
};

// The lcore body: loops until the source drains, then Engine::finish(source.end_ns())
// on this same lcore (the engine is single-writer). Returns 0.
int worker_main(void* context);

// One burst, exposed for the in-memory benchmark and tests: parses and processes `pkts`
// and frees them. Returns the number of packets.
unsigned worker_burst(WorkerContext& ctx, rte_mbuf** pkts, unsigned n) noexcept;

}  // namespace insert::pipeline
