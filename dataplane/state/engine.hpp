// The per-worker telemetry engine: SPEC.md sections 3-6 over a stream of parsed RoCEv2
// packets. One instance per worker lcore, single writer, all memory preallocated at
// creation; process() never allocates, locks, throws or logs. Counters are atomics that
// a stats reader on another thread may load at any time (relaxed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "dataplane/proto/parser.hpp"
#include "dataplane/state/records.hpp"

namespace insert::state {

// Slots the periodic report's sweep visits after each burst: at 100k endpoints and 32
// packets a burst, a report is complete after ~100k packets (a tenth of a second at 1 Mpps)
// and each burst carries at most 64 record pushes more.
constexpr uint32_t kReportSlotsPerBurst = 64;

struct EngineConfig {
    uint32_t max_endpoints =
        1u << 20;                  // table capacity; beyond it packets are counted, not tracked
    uint64_t idle_timeout_ns = 0;  // 0: never evict (offline replay keeps everything)
    // Hash tables start small and double as they fill (FixedHashMap): a replay then
    // zero-fills pages for the endpoints it has, not for max_endpoints. Off for live ports,
    // where the pause of a doubling (milliseconds at 100k endpoints) would drop frames.
    bool grow_tables = false;
    // Slots the periodic report's sweep visits per burst (tests make it slow, so that
    // the changes after a boundary, not the sweep, take most snapshots).
    uint32_t report_sweep_slots = kReportSlotsPerBurst;
};

// Monotonic counters of one engine, readable from other threads.
struct EngineCounters {
    std::atomic<uint64_t> packets{0};         // well-formed RoCE packets processed
    std::atomic<uint64_t> endpoints{0};       // endpoints created (each lifetime once)
    std::atomic<uint64_t> endpoints_live{0};  // table slots in use now (endpoint parts)
    std::atomic<uint64_t> connections{0};     // pairs formed
    std::atomic<uint64_t> msgs{0};            // msg records emitted
    std::atomic<uint64_t> evicted{0};         // endpoints evicted idle (with a final qp record)
    std::atomic<uint64_t> table_full{0};      // packets of endpoints that found no room
    // Bits set in the engine's refused-endpoint filter: refused_endpoints() turns them into
    // the number of distinct endpoints (ip, qpn) that found no room at all.
    std::atomic<uint64_t> table_full_bits{0};
    std::atomic<uint64_t> msgs_overflow{0};    // messages frozen early: too many outstanding
    std::atomic<uint64_t> records_dropped{0};  // records the sink refused
    std::atomic<uint64_t> orphans_dropped{0};  // Middle/Last packets whose First never came in time
    // Deadline-wheel entries tick() looked at: those whose bucket came due (not every slot).
    std::atomic<uint64_t> tick_examined{0};
    // Events that found no room in the table of open event windows, each written as a window
    // of its own (docs/semantics.md "Events").
    std::atomic<uint64_t> events_unwindowed{0};
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Bits of the per-engine filter of refused endpoints. Linear counting over it estimates up to
// a few million distinct endpoints within 1%, and is exact in practice for small counts
// (two of n refused endpoints share a bit with probability about n^2 / 2^21).
constexpr uint32_t kRefusedFilterBits = 1u << 20;
// Distinct refused endpoints estimated from `bits` set in one engine's filter.
uint64_t refused_endpoints(uint64_t bits);

class Engine {
  public:
    // Allocates every table; nullptr and `error` set if memory cannot be had.
    static std::unique_ptr<Engine> create(const EngineConfig& config, RecordSink& sink,
                                          std::string& error);
    // Bytes an engine with this configuration reserves: what it holds at capacity, and
    // what a live appliance (which locks its memory) makes resident at start.
    static uint64_t memory_bytes(const EngineConfig& config);
    virtual ~Engine() = default;

    // Well-formed RoCE packets (verdict roce) with their timestamps, in capture order for
    // their connections: the same as process() on each in turn, but the state every packet
    // will touch is prefetched a few packets ahead (the table is far larger than the cache).
    virtual void process_burst(const proto::ParsedPacket* pkts, const uint64_t* ts_ns,
                               unsigned n) noexcept = 0;
    // One packet (tests; the packet path uses process_burst).
    void process(const proto::ParsedPacket& pkt, uint64_t ts_ns) noexcept {
        process_burst(&pkt, &ts_ns, 1);
    }
    // Housekeeping at `now_ns`: evicts endpoints idle longer than the timeout (a `timeout`
    // event per open message) and pushes the windows of `timeout` events that ended. Its
    // work is proportional to the entries of the deadline buckets that came due since the
    // last call (plus at most a wheel turn of empty buckets), not to the endpoints held.
    virtual void tick(uint64_t now_ns) noexcept = 0;
    // No packet after this call is older than `now_ns`: the event windows (one second of
    // capture time, docs/semantics.md "Events") that ended by then are pushed, then a
    // WindowMark (workers call it at every whole second their packets or clock pass).
    virtual void close_windows(uint64_t now_ns) noexcept = 0;
    // A `qp` record for every live endpoint as it was at `now_ns` (the periodic --interval
    // report), with bounded work per call: an endpoint is reported just before the first
    // change to it after `now_ns` (a packet to it, its peer's response, pairing, eviction),
    // and the rest by a sweep over a few slots at the end of each process_burst() and each
    // advance_report(). The next report() and finish() complete the sweep first. The
    // records are those of a full scan at `now_ns`; only their order differs.
    virtual void report(uint64_t now_ns) = 0;
    // A step of the report in progress, if any (a worker calls it when a poll is empty, so
    // that a quiet link still completes its report); true while one is in progress.
    virtual bool advance_report() noexcept = 0;
    // End of input: freezes every open message, emits final `qp` records and every event
    // window still open.
    virtual void finish(uint64_t end_ns) = 0;

    virtual const EngineCounters& counters() const = 0;
    // Bytes of state per endpoint slot (for the memory report).
    virtual std::size_t bytes_per_endpoint() const = 0;
};

}  // namespace insert::state
