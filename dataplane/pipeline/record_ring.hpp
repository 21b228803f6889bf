// Records leave a worker through its own SPSC rte_ring of fixed-size state::Record
// elements (copied by value: no pool to manage, no pointer that outlives its slot), drained
// by the exporter thread. One FIFO per worker keeps each endpoint's `msg` records ahead of
// its `qp` record, which the exporter's latency book relies on.
#pragma once

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "dataplane/state/records.hpp"

namespace insert::pipeline {

static_assert(sizeof(state::Record) % 4 == 0, "rte_ring elements are multiples of 4 bytes");

// What a worker does when its record ring is full.
enum class FullPolicy : uint8_t {
    // Wait for the exporter (offline replay: time is the file's, so waiting loses nothing).
    wait,
    // Refuse the record: the engine counts it in records_dropped (live modes, where a
    // stalled exporter must not stall packet processing).
    drop,
};

class RecordRing final : public state::RecordSink {
  public:
    // nullptr and `error` when the ring cannot be allocated. `size`: a power of two.
    static std::unique_ptr<RecordRing> create(const std::string& name, unsigned size,
                                              FullPolicy policy, std::string& error);
    ~RecordRing() override;

    // Worker side (single producer).
    bool push(const state::Record& record) override;
    // Exporter side (single consumer).
    unsigned pop(state::Record* out, unsigned n) noexcept {
        return rte_ring_sc_dequeue_burst_elem(ring_, out, sizeof(state::Record), n, nullptr);
    }
    // Up to n records read in place (no copy out of the ring): at most two runs, the
    // second when they wrap around the ring's end. They stay the consumer's, and may be
    // modified, until release(size()).
    class Peek {
      public:
        unsigned size() const { return n_; }
        state::Record& operator[](unsigned i) const {
            return i < n1_ ? first_[i] : second_[i - n1_];
        }

      private:
        friend class RecordRing;
        state::Record* first_ = nullptr;
        state::Record* second_ = nullptr;
        unsigned n1_ = 0;
        unsigned n_ = 0;
    };
    Peek peek(unsigned n) noexcept {
        rte_ring_zc_data zcd{};  // set by the call; zeroed for GCC's flow analysis
        Peek p;
        p.n_ = rte_ring_dequeue_zc_burst_elem_start(ring_, sizeof(state::Record), n, &zcd, nullptr);
        p.first_ = static_cast<state::Record*>(zcd.ptr1);
        p.second_ = static_cast<state::Record*>(zcd.ptr2);
        p.n1_ = p.n_ == 0 ? 0 : zcd.n1;
        return p;
    }
    void release(const Peek& p) noexcept { rte_ring_dequeue_zc_elem_finish(ring_, p.size()); }
    bool empty() const noexcept { return rte_ring_empty(ring_); }

    // Set when the exporter is gone, so a waiting producer gives up instead of hanging.
    void close() noexcept { closed_.store(true, std::memory_order_release); }
    // Times a producer found the ring full (waited or dropped).
    uint64_t full_events() const { return full_events_.load(std::memory_order_relaxed); }

  private:
    RecordRing() = default;
    // One record into the ring, false when it is full. Through the zero-copy API: the record
    // is copied into its slot by memcpy (a few vector moves), where rte_ring's element
    // enqueue copies any size but 8 and 16 bytes as 32-bit words - 58 loads and stores for
    // a Record, ~7% of a worker's time on small messages (docs/performance.md,
    // "The record ring").
    bool enqueue(const state::Record& record) noexcept {
        rte_ring_zc_data zcd{};
        if (rte_ring_enqueue_zc_bulk_elem_start(ring_, sizeof(state::Record), 1, &zcd, nullptr) !=
            1)
            return false;
        std::memcpy(zcd.ptr1, &record, sizeof(state::Record));  // n == 1: never split
        rte_ring_enqueue_zc_elem_finish(ring_, 1);
        return true;
    }
    rte_ring* ring_ = nullptr;
    FullPolicy policy_ = FullPolicy::wait;
    std::atomic<bool> closed_{false};
    std::atomic<uint64_t> full_events_{0};
};

}  // namespace insert::pipeline
