// A fixed pool of T slots with a free list, allocated once per worker: open messages and
// orphan blocks are taken from here on the hot path without touching the allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dataplane/state/lazy_array.hpp"

namespace insert::state {

constexpr uint32_t kNoIndex = UINT32_MAX;

// Prefetches every cache line of [p, p + bytes). Prefetch helpers are always inlined: GCC
// deletes calls to an out-of-line function whose only effect is a prefetch.
[[gnu::always_inline]] inline void prefetch_range(const void* p, std::size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off);
}

template <typename T>
class SlotPool {
    static_assert(std::is_trivially_copyable_v<T>, "slots are reset by copying a constant");

  public:
    explicit SlotPool(uint32_t capacity)
        : capacity_(capacity), slots_(capacity), free_stack_(capacity) {}
    bool valid() const { return slots_.valid() && free_stack_.valid(); }
    std::size_t memory_bytes() const { return memory_bytes_for(capacity_); }
    static std::size_t memory_bytes_for(uint32_t capacity) {
        return std::size_t{capacity} * (sizeof(T) + sizeof(uint32_t));
    }

    // A freshly value-initialised slot, or kNoIndex when the pool is exhausted. Released
    // slots are reused last-in first-out (the most recently released is still in cache);
    // then slots in index order, so untouched memory stays untouched.
    uint32_t acquire() {
        uint32_t i;
        if (free_top_ > 0)
            i = free_stack_[--free_top_];
        else if (fresh_ < capacity_)
            i = fresh_++;
        else
            return kNoIndex;
        // Copied from a constant rather than `new T{}`: GCC zeroes a value-initialised
        // 128-byte message with `rep stos`, whose start-up took most of create_message's
        // samples; a copy of a known constant becomes a few vector stores.
        static constexpr T kFresh{};
        std::memcpy(static_cast<void*>(&slots_[i]), &kFresh, sizeof(T));
        return i;
    }
    void release(uint32_t i) { free_stack_[free_top_++] = i; }

    // Prefetches the slot that the acquire `ahead` acquisitions from now would return if
    // nothing is released meanwhile: a packet about to open a message calls it with the
    // number of packets between it and its processing. The free stack is a plain array,
    // so finding that slot costs no miss of its own.
    [[gnu::always_inline]] void prefetch_next(uint32_t ahead) const {
        if (ahead < free_top_)
            prefetch_slot(free_stack_[free_top_ - 1 - ahead]);
        else if (fresh_ + (ahead - free_top_) < capacity_)
            prefetch_slot(fresh_ + (ahead - free_top_));
    }
    // Prefetches every cache line of slot i.
    [[gnu::always_inline]] void prefetch_slot(uint32_t i) const {
        prefetch_range(&slots_[i], sizeof(T));
    }
    // Prefetches the first cache line of slot i only.
    [[gnu::always_inline]] void prefetch_first_line(uint32_t i) const {
        __builtin_prefetch(&slots_[i]);
    }
    T& operator[](uint32_t i) { return slots_[i]; }
    const T& operator[](uint32_t i) const { return slots_[i]; }

  private:
    uint32_t capacity_;
    LazyArray<T> slots_;
    LazyArray<uint32_t> free_stack_;  // [0, free_top_): released slots
    uint32_t free_top_ = 0;
    uint32_t fresh_ = 0;  // slots [fresh_, capacity_) were never handed out
};

}  // namespace insert::state
