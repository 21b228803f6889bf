// A fixed pool of T slots with a free list, allocated once per worker: open messages and
// orphan blocks are taken from here on the hot path without touching the allocator.
#pragma once

#include <cstdint>
#include <memory>
#include <new>

namespace insert::state {

constexpr uint32_t kNoIndex = UINT32_MAX;

template <typename T>
class SlotPool {
  public:
    explicit SlotPool(uint32_t capacity)
        : capacity_(capacity),
          slots_(new (std::nothrow) T[capacity]),
          next_free_(new (std::nothrow) uint32_t[capacity]) {
        if (!valid()) return;
        for (uint32_t i = 0; i < capacity; ++i) next_free_[i] = i + 1 < capacity ? i + 1 : kNoIndex;
        free_ = capacity ? 0 : kNoIndex;
    }
    bool valid() const { return slots_ && next_free_; }
    std::size_t memory_bytes() const {
        return std::size_t{capacity_} * (sizeof(T) + sizeof(uint32_t));
    }

    // A freshly value-initialised slot, or kNoIndex when the pool is exhausted.
    uint32_t acquire() {
        const uint32_t i = free_;
        if (i == kNoIndex) return i;
        free_ = next_free_[i];
        slots_[i] = T{};
        return i;
    }
    void release(uint32_t i) {
        next_free_[i] = free_;
        free_ = i;
    }
    T& operator[](uint32_t i) { return slots_[i]; }
    const T& operator[](uint32_t i) const { return slots_[i]; }

  private:
    uint32_t capacity_;
    std::unique_ptr<T[]> slots_;
    std::unique_ptr<uint32_t[]> next_free_;
    uint32_t free_ = kNoIndex;
};

}  // namespace insert::state
