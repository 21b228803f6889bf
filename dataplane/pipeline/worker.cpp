#include "dataplane/pipeline/worker.hpp"

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <ctime>
#include <span>

#include "dataplane/common/counter.hpp"
#include "dataplane/pipeline/backoff.hpp"

namespace insert::pipeline {

namespace {

using common::bump;  // the worker is its counters' single writer

// A replay's mbufs carry DPDK's "no port" (their pool's initial value, which nothing
// overwrites), which the records write as a null port.
static_assert(proto::kNoPort == RTE_MBUF_PORT_INVALID);

// Capture-time boundaries are multiples of the period since the epoch, so every worker
// (whatever its share of packets) uses the same ones.
inline uint64_t next_boundary(uint64_t ts, uint64_t period) noexcept {
    return (ts / period + 1) * period;
}

// A RoCE frame's headers span its first two lines: an IPv4 BTH ends at byte 54, its RETH
// or AETH after it, and IPv6 headers end past byte 64.
inline void prefetch_headers(const rte_mbuf* m) noexcept {
    const char* p = rte_pktmbuf_mtod(m, const char*);
    rte_prefetch0(p);
    rte_prefetch0(p + RTE_CACHE_LINE_SIZE);
}

uint64_t thread_cpu_ns() noexcept {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

// The periodic report, the housekeeping tick and the close of the event windows (every
// whole second: docs/semantics.md "Events") of every boundary at or before `ts`, at the
// newest such boundary. `first_boundaries`: the first time (0 until then) is set from
// `ts`; a quiet link's clock only moves boundaries a frame has set (nothing to report or
// evict before the first frame).
void cross_boundaries(WorkerContext& ctx, uint64_t ts, bool first_boundaries) noexcept {
    const uint64_t interval = ctx.config.interval_ns;
    const uint64_t tick = ctx.config.tick_ns;
    if (interval != 0 && ts >= ctx.report_next && (ctx.report_next != 0 || first_boundaries)) {
        if (ctx.report_next != 0) {
            ctx.engine->report(ts / interval * interval);
            bump(ctx.counters.reports, 1);
        }
        ctx.report_next = next_boundary(ts, interval);
    }
    if (tick != 0 && ts >= ctx.tick_next && (ctx.tick_next != 0 || first_boundaries)) {
        if (ctx.tick_next != 0) {
            ctx.engine->tick(ts / tick * tick);
            bump(ctx.counters.ticks, 1);
        }
        ctx.tick_next = next_boundary(ts, tick);
    }
    // Event windows need no run of their own: closing them at the start of the run whose
    // first packet passed the second is enough, since no later packet is older (capture
    // order; a packet of the new second in the run before only pushed its endpoint's older
    // window early). So no packet pays a comparison for them. Unlike reports and ticks, a
    // quiet link's clock closes them before any frame came too: the exporter merges every
    // worker's windows once all have passed them, and a worker with no traffic must not
    // hold the others' back.
    if (ts >= ctx.window_next) {
        ctx.engine->close_windows(ts);
        ctx.window_next = next_boundary(ts, state::kEventWindowNs);
    }
}

// A live queue empty for kQuietPolls polls in a row: the boundaries its clock has passed,
// kQuietLagNs ago, are crossed as a frame at that time would cross them. Without this,
// a link that goes quiet keeps its idle endpoints (and their unfinished messages) and its
// periodic report until the next frame, which may never come. The lag keeps the boundary
// behind any frame stamped before the queue was found empty and still on its way to this
// worker (a dispatch ring holds microseconds of them).
constexpr unsigned kQuietPolls = 64;
constexpr uint64_t kQuietLagNs = 10'000'000;

void cross_quiet_boundaries(WorkerContext& ctx) noexcept {
    const uint64_t now = ctx.source->quiet_time_ns(ctx.index);
    if (now > kQuietLagNs) cross_boundaries(ctx, now - kQuietLagNs, false);
}

}  // namespace

unsigned worker_burst(WorkerContext& ctx, rte_mbuf** pkts, unsigned n) noexcept {
    state::Engine& engine = *ctx.engine;
    WorkerCounters& c = ctx.counters;
    uint64_t non_roce = 0;
    uint64_t malformed[proto::kMalformedReasons] = {};
    unsigned roce = 0;
    constexpr uint64_t kNotAsked = UINT64_MAX;
    uint64_t burst_ns = kNotAsked;  // the source's time for the burst; 0: per-mbuf stamps

    // Frame headers are a miss each (a NIC wrote them by DMA; 100-200 ns here), parsing one
    // takes ~20 ns: keep several in flight.
    constexpr unsigned kFramesAhead = 8;
    for (unsigned i = 0; i < n && i < kFramesAhead; ++i) prefetch_headers(pkts[i]);
    for (unsigned i = 0; i < n; ++i) {
        if (i + kFramesAhead < n) prefetch_headers(pkts[i + kFramesAhead]);
        const rte_mbuf* m = pkts[i];
        const auto frame =
            std::span<const uint8_t>(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
        if (!proto::may_be_roce(frame)) {  // ARP, TCP, other UDP: no call, no result
            ++non_roce;
            continue;
        }
        proto::ParsedPacket& p = ctx.parsed[roce];
        switch (proto::parse_frame(frame, p)) {
            case proto::Verdict::roce:
                // Where it came in (a message's origin, docs/semantics.md "Messages"): the
                // mbuf's first line, already read for its data.
                p.port = m->port;
                if (burst_ns == kNotAsked) burst_ns = ctx.source->burst_time_ns(ctx.index);
                ctx.ts[roce] = burst_ns != 0 ? burst_ns : ctx.timestamp.get(m);
                ++roce;
                break;
            case proto::Verdict::malformed:
                ++malformed[static_cast<unsigned>(p.malformed)];
                break;
            case proto::Verdict::non_roce:
                ++non_roce;
                break;
        }
    }

    const uint64_t interval = ctx.config.interval_ns;
    const uint64_t tick = ctx.config.tick_ns;
    const auto at_boundary = [&](uint64_t ts) {
        return (interval != 0 && ts >= ctx.report_next) || (tick != 0 && ts >= ctx.tick_next);
    };
    for (unsigned i = 0; i < roce;) {
        // Reports and ticks happen before the first packet at or past a boundary, at that
        // boundary: results depend on capture time only, never on replay speed.
        cross_boundaries(ctx, ctx.ts[i], true);
        // The packets up to the next boundary go to the engine as one run (usually the
        // whole burst), which prefetches their state ahead of the work.
        unsigned end = i + 1;
        while (end < roce && !at_boundary(ctx.ts[end])) ++end;
        engine.process_burst(&ctx.parsed[i], &ctx.ts[i], end - i);
        i = end;
    }
    ctx.source->release(ctx.index, pkts, static_cast<uint16_t>(n));

    bump(c.frames, n);
    bump(c.roce, roce);
    bump(c.non_roce, non_roce);
    for (unsigned r = 1; r < proto::kMalformedReasons; ++r)
        if (malformed[r]) bump(c.malformed[r], malformed[r]);
    return n;
}

int worker_main(void* arg) {
    WorkerContext& ctx = *static_cast<WorkerContext*>(arg);
    PacketSource& source = *ctx.source;
    const unsigned q = ctx.index;
    rte_mbuf* pkts[WorkerContext::kBurst];
    Backoff idle(ctx.config.idle);
    // CPU time, unlike busy TSC cycles, excludes time the kernel gave other threads: the
    // honest per-core rate when lcores outnumber cores or the machine is shared.
    const uint64_t cpu_start = thread_cpu_ns();
    // Busy time: from a burst's start to the next poll's end while polls return frames,
    // and to the first empty poll after. One TSC read per burst (~18 ns on these VMs, half
    // a 64-byte frame's budget at 30 Mpps when read twice per burst).
    uint64_t busy_since = 0;  // 0: idle
    unsigned empty_polls = 0;
    for (;;) {
        const uint16_t n = source.rx_burst(q, pkts, WorkerContext::kBurst);
        if (n == 0) {
            if (busy_since != 0) {
                bump(ctx.counters.busy_cycles, rte_rdtsc() - busy_since);
                busy_since = 0;
            }
            if (source.drained(q)) break;
            // A quiet link still completes a periodic report: a few slots per empty poll.
            if (ctx.engine->advance_report()) continue;
            if (++empty_polls == kQuietPolls) {
                empty_polls = 0;
                cross_quiet_boundaries(ctx);
            }
            idle.pause();
            continue;
        }
        idle.reset();
        empty_polls = 0;
        const uint64_t now = rte_rdtsc();
        if (busy_since != 0) bump(ctx.counters.busy_cycles, now - busy_since);
        busy_since = now;
        worker_burst(ctx, pkts, n);
        bump(ctx.counters.bursts, 1);
    }
    ctx.counters.cpu_ns.store(thread_cpu_ns() - cpu_start, std::memory_order_relaxed);
    // The end of input crosses the boundaries after this worker's last packet too: a worker
    // whose last packet came early must still evict what went idle after it, as one worker
    // seeing every packet (its later packets cross those boundaries) does; otherwise 1 and
    // 2 workers differ by eviction `timeout` events (SPEC invariant 1).
    const uint64_t end = source.end_ns();
    if (ctx.config.tick_ns != 0 && ctx.tick_next != 0 && end >= ctx.tick_next) {
        ctx.engine->tick(end / ctx.config.tick_ns * ctx.config.tick_ns);
        bump(ctx.counters.ticks, 1);
    }
    ctx.engine->finish(end);
    ctx.finished.store(true, std::memory_order_release);
    return 0;
}

}  // namespace insert::pipeline
