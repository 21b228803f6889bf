// One thread's data-path trace records waiting for a call of the trace site
// (trace_sites.h). Header-only so that the unit tests can drive it with their own sink.
//
// Producer: the owning thread, which appends a record per accepted work request and per
// returned completion - plain stores into a slot and one release store of `head`, no lock
// and no atomic read-modify-write, because this runs on every traced post and poll.
// Consumers: whoever holds `busy` - the owner when 16 records wait (the common case, so one
// site hit reports 16 records), softverbs' flusher thread when the oldest record is older
// than its tick, and any thread at exit. `busy` serialises the consumers only (a test-and-
// set, taken once per flush and never by an append); consumers never block the owner
// except when all kSlots slots are full, and the owner never blocks a consumer.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

#include "hosttrace/softverbs/trace_sites.h"

namespace insert::softverbs {

class TraceRing {
  public:
    // Slots: a power of two, and room for several flushes' worth of records, so that an
    // owner whose flush was skipped (a consumer held `busy`) keeps appending without waiting.
    static constexpr uint32_t kSlots = 64;
    // The owner flushes when this many records wait: one site call's worth.
    static constexpr uint32_t kFlushAt = SV_TRACE_MAX_BATCH;
    static_assert((kSlots & (kSlots - 1)) == 0 && kSlots >= 2 * kFlushAt);

    TraceRing(uint32_t tid, const char* comm) : tid_(tid) {
        std::memset(comm_, 0, sizeof(comm_));
        if (comm) std::memcpy(comm_, comm, strnlen(comm, sizeof(comm_) - 1));
    }

    uint32_t tid() const { return tid_; }
    const char* comm() const { return comm_; }

    // Owner only: records appended and not yet taken by a consumer.
    uint32_t pending() const {
        return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire);
    }
    bool full() const { return pending() == kSlots; }

    // Owner only: the slot of the next record (the ring must not be full: flush(sink,
    // kWaitForever) first), made visible to consumers by publish().
    sv_trace_rec& next_slot() { return slots_[head_.load(std::memory_order_relaxed) % kSlots]; }
    void publish() {
        head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    // How long flush() waits for another consumer: not at all (the flusher, the owner at 16
    // records: the other consumer is reporting these very records), bounded (thread and
    // process exit: a signal handler may have interrupted a flush of this ring on the very
    // thread that exits), or until done (the owner with a full ring, which must not drop).
    static constexpr uint32_t kNoWait = 0;
    static constexpr uint32_t kWaitBounded = 100000;  // yields: ~0.1-1 s
    static constexpr uint32_t kWaitForever = UINT32_MAX;

    // Hands every waiting record to sink(const sv_trace_rec*, uint32_t n, const TraceRing&),
    // oldest first, at most kFlushAt per call. `patience`: how many times to yield while
    // another consumer holds the ring (kNoWait, kWaitBounded, kWaitForever).
    // `older_than_ns` (the flusher's tick): only when the oldest record is at least that old.
    // Returns the number of records handed over.
    template <typename Sink>
    uint32_t flush(Sink&& sink, uint32_t patience, uint64_t older_than_ns = 0) {
        for (uint32_t waited = 0; busy_.exchange(true, std::memory_order_acquire); waited++) {
            if (waited >= patience && patience != kWaitForever) return 0;
            std::this_thread::yield();
        }
        uint32_t t = tail_.load(std::memory_order_relaxed);
        const uint32_t h = head_.load(std::memory_order_acquire);
        uint32_t done = 0;
        if (h != t && (older_than_ns == 0 || slots_[t % kSlots].t_ns <= older_than_ns)) {
            // Slots [t, h) are published and stay untouched until tail moves past them:
            // copied out a batch at a time (a batch may wrap around the end of the array),
            // reported, then released to the owner.
            sv_trace_rec batch[kFlushAt];
            while (t != h) {
                const uint32_t n = h - t < kFlushAt ? h - t : kFlushAt;
                for (uint32_t i = 0; i < n; i++) batch[i] = slots_[(t + i) % kSlots];
                sink(static_cast<const sv_trace_rec*>(batch), n, *this);
                t += n;
                done += n;
                tail_.store(t, std::memory_order_release);
            }
        }
        busy_.store(false, std::memory_order_release);
        return done;
    }

    // After fork(), in the child: the parent reports what its rings held.
    void forget_pending(uint32_t tid) {
        tail_.store(head_.load(std::memory_order_relaxed), std::memory_order_relaxed);
        busy_.store(false, std::memory_order_relaxed);
        tid_ = tid;
    }

    TraceRing* next = nullptr;  // the registry's list (trace_buffer.cpp)

  private:
    // The owner's and the consumers' indexes on separate cache lines: the owner writes head
    // on every record, a consumer writes tail once per flush.
    alignas(64) std::atomic<uint32_t> head_{0};
    alignas(64) std::atomic<uint32_t> tail_{0};
    std::atomic<bool> busy_{false};
    uint32_t tid_;
    char comm_[16];
    alignas(64) sv_trace_rec slots_[kSlots];
};

}  // namespace insert::softverbs
