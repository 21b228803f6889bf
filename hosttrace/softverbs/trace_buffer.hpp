// softverbs' side of insert-trace's data-path tracing: per-thread rings of records
// (trace_ring.hpp) reported through the trace site softverbs_trace_flush (trace_sites.h).
//
// Nothing is recorded unless a tracer probes the site: trace_enabled() reads the site's
// first code byte, which the kernel overwrites (int3, or a call once the uprobe is
// optimised) while a uprobe is attached in this process. Untraced, a post or poll pays one
// byte load.
//
// When records reach the tracer:
//   - the owning thread calls the site as soon as 16 records wait (trace_commit);
//   - a flusher thread, started with the first ring, wakes every kFlushTickMs and flushes
//     every ring whose oldest record is at least kFlushTickMs old: a thread that posts
//     and never polls (or stops calling verbs) has its records reported within about
//     2 x kFlushTickMs (plus the flusher's scheduling delay);
//   - at thread exit (the ring's thread_local reaper), at ibv_destroy_qp (every ring) and
//     at process exit (atexit: every ring).
// Lost: what waits in a process that dies without running its exit handlers (SIGKILL,
// _exit, exec): at most the last ~2 x kFlushTickMs or kFlushAt records per thread.
#pragma once

#include <cstdint>
#include <ctime>

#include "hosttrace/softverbs/trace_ring.hpp"
#include "hosttrace/softverbs/trace_sites.h"

extern "C" __attribute__((visibility("hidden"))) void softverbs_trace_flush_local(
    const sv_trace_rec*, uint32_t, uint32_t, const char*);

namespace insert::softverbs {

constexpr int kFlushTickMs = 5;

// True while a uprobe sits on the site in this process (its first byte is no longer the
// 0x0f of the 5-byte NOP).
inline bool trace_enabled() {
    return *reinterpret_cast<const volatile uint8_t*>(&softverbs_trace_flush_local) != 0x0f;
}

// CLOCK_MONOTONIC in ns through the vDSO (~20 ns with the TSC clocksource): the clock of
// bpf_ktime_get_ns and of every other insert-trace timestamp.
inline uint64_t trace_now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The calling thread's ring, made (and registered with the flusher) on first use; nullptr
// when there is no memory for it (the thread's work is then not traced).
TraceRing* trace_ring();

// Out of line: the site calls (trace_buffer.cpp).
void trace_flush_full(TraceRing& ring);
void trace_flush_owner(TraceRing& ring);

// Owner: a full ring is flushed before the next record is written (waits for a flush in
// progress elsewhere: the only case where appending waits).
inline sv_trace_rec& trace_slot(TraceRing& ring) {
    if (ring.full()) [[unlikely]]
        trace_flush_full(ring);
    return ring.next_slot();
}

// Owner: the next slot with its header written (time, context and object of the verb,
// QP number, kind, position in the call, completions in the poll); the caller fills `u`
// and publishes it.
inline sv_trace_rec& trace_record(TraceRing& ring, uint64_t t_ns, const void* ctx, const void* obj,
                                  uint32_t qp_num, uint16_t kind, uint16_t index, uint32_t polled) {
    sv_trace_rec& rec = trace_slot(ring);
    rec.t_ns = t_ns;
    rec.ctx = reinterpret_cast<uintptr_t>(ctx);
    rec.obj = reinterpret_cast<uintptr_t>(obj);
    rec.qp_num = qp_num;
    rec.kind = kind;
    rec.index = index;
    rec.polled = polled;
    rec.reserved = 0;
    return rec;
}

// Owner, after the records of one verb call: one site call per 16 waiting records.
inline void trace_commit(TraceRing& ring) {
    if (ring.pending() >= TraceRing::kFlushAt) trace_flush_owner(ring);
}

// Every thread's ring, now (QP destruction).
void trace_flush_all();

}  // namespace insert::softverbs
