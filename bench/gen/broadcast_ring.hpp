// A bounded ring that hands the simulator's observed packets to the output threads: one
// producer, a fixed number of consumers, each of which sees every item in order (the truth
// observer and the frame writer both need the whole stream).
//
// Items are published in batches, and waiting is done with C++20 atomic wait/notify on two
// "signal" counters (one per direction) rather than by spinning: the machine may have
// fewer cores than the pipeline has threads, and a spinning thread would take CPU time from
// the thread it waits for. A notify with nobody waiting costs no system call.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace insert::gen {

template <typename T>
class BroadcastRing {
  public:
    // `capacity` must be a power of two; `batch` items are published at a time. Consumers
    // wait on `doorbell`, which the ring rings on every publish: a thread consuming several
    // rings gives them the same one, and waits on it when all of them are empty.
    BroadcastRing(std::size_t capacity, std::size_t batch, unsigned consumers,
                  std::atomic<uint32_t>* doorbell = nullptr)
        : data_signal_(doorbell ? doorbell : &own_doorbell_),
          slots_(new T[capacity]),
          mask_(capacity - 1),
          batch_(batch),
          consumers_(consumers),
          read_(new Cursor[consumers]) {}

    // ---- Producer ----
    // The next slot to fill; waits while the slowest consumer still needs it.
    T& slot() {
        if (write_ - min_read_ > mask_) wait_for_space();
        return slots_[write_ & mask_];
    }
    void commit() {
        if (++write_ - published_local_ >= batch_) publish();
    }
    // Publishes what is left and tells the consumers that nothing more comes.
    void close() {
        published_local_ = write_;
        published_.store(write_, std::memory_order_release);
        closed_.store(true, std::memory_order_release);  // after the final count
        ring();
    }

    // ---- Consumer `c` ----
    // Items published and not yet released by this consumer, contiguous in memory (so at
    // most up to the end of the ring); empty once the ring is closed and drained.
    std::span<const T> acquire(unsigned c) {
        for (;;) {
            const uint32_t seen = data_signal_->load(std::memory_order_acquire);
            const std::span<const T> items = try_acquire(c);
            if (!items.empty() || drained(c)) return items;
            data_signal_->wait(seen, std::memory_order_acquire);
        }
    }
    // The same without waiting: possibly empty.
    std::span<const T> try_acquire(unsigned c) const {
        const uint64_t local = read_[c].local;
        const uint64_t published = published_.load(std::memory_order_acquire);
        const uint64_t begin = local & mask_;
        const uint64_t n = std::min<uint64_t>(published - local, mask_ + 1 - begin);
        return {slots_.get() + begin, static_cast<std::size_t>(n)};
    }
    // Closed and every item released by consumer `c`. (`closed_` is stored after the final
    // count: whoever sees it closed sees that count.)
    bool drained(unsigned c) const {
        return closed_.load(std::memory_order_acquire) &&
               published_.load(std::memory_order_acquire) == read_[c].local;
    }
    void release(unsigned c, std::size_t n) {
        Cursor& me = read_[c];
        me.local += n;
        me.pos.store(me.local, std::memory_order_release);
        space_signal_.fetch_add(1, std::memory_order_release);
        space_signal_.notify_one();
    }

  private:
    struct alignas(64) Cursor {
        std::atomic<uint64_t> pos{0};
        uint64_t local = 0;  // the consumer's own copy
    };

    void publish() {
        published_local_ = write_;
        published_.store(write_, std::memory_order_release);
        ring();
    }
    void ring() {
        data_signal_->fetch_add(1, std::memory_order_release);
        data_signal_->notify_all();
    }
    void wait_for_space() {
        publish();  // the consumers may be waiting for what was written so far
        for (;;) {
            const uint32_t seen = space_signal_.load(std::memory_order_acquire);
            uint64_t low = write_;
            for (unsigned c = 0; c < consumers_; ++c)
                low = std::min(low, read_[c].pos.load(std::memory_order_acquire));
            min_read_ = low;
            if (write_ - min_read_ <= mask_) return;
            space_signal_.wait(seen, std::memory_order_acquire);
        }
    }

    std::atomic<uint32_t> own_doorbell_{0};
    std::atomic<uint32_t>* const data_signal_;
    std::unique_ptr<T[]> slots_;
    const uint64_t mask_;
    const std::size_t batch_;
    const unsigned consumers_;
    // Producer side.
    uint64_t write_ = 0, published_local_ = 0, min_read_ = 0;
    alignas(64) std::atomic<uint64_t> published_{0};
    std::atomic<bool> closed_{false};
    alignas(64) std::atomic<uint32_t> space_signal_{0};
    std::unique_ptr<Cursor[]> read_;
};

}  // namespace insert::gen
