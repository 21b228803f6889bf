// A fixed pool of T slots with a free list, allocated once per worker: open messages and
// orphan blocks are taken from here on the hot path without touching the allocator.
#pragma once

#include <cstdint>
#include <new>

#include "dataplane/state/lazy_array.hpp"

namespace insert::state {

constexpr uint32_t kNoIndex = UINT32_MAX;

template <typename T>
class SlotPool {
  public:
    explicit SlotPool(uint32_t capacity)
        : capacity_(capacity), slots_(capacity), next_free_(capacity) {}
    bool valid() const { return slots_.valid() && next_free_.valid(); }
    std::size_t memory_bytes() const {
        return std::size_t{capacity_} * (sizeof(T) + sizeof(uint32_t));
    }

    // A freshly value-initialised slot, or kNoIndex when the pool is exhausted. Slots are
    // handed out in index order first, so untouched memory stays untouched.
    uint32_t acquire() {
        uint32_t i;
        if (free_ != kNoIndex) {
            i = free_;
            free_ = next_free_[i];
        } else if (fresh_ < capacity_) {
            i = fresh_++;
        } else {
            return kNoIndex;
        }
        new (&slots_[i]) T{};
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
    LazyArray<T> slots_;
    LazyArray<uint32_t> next_free_;
    uint32_t free_ = kNoIndex;  // released slots
    uint32_t fresh_ = 0;        // slots [fresh_, capacity_) were never handed out
};

}  // namespace insert::state
