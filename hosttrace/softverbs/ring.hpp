// Fixed-capacity FIFO used for work queues and CQs: allocated once at creation, never grows,
// so a slow consumer can never make the library allocate without bound.
#pragma once

#include <cstddef>
#include <vector>

namespace insert::softverbs {

template <typename T>
class Ring {
  public:
    void reset(std::size_t capacity) {
        slots_.assign(capacity, T{});
        head_ = 0;
        size_ = 0;
    }
    std::size_t capacity() const { return slots_.size(); }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    bool full() const { return size_ == slots_.size(); }

    // Oldest element is index 0.
    T& at(std::size_t i) { return slots_[(head_ + i) % slots_.size()]; }
    T& front() { return at(0); }
    T& back() { return at(size_ - 1); }

    // Returns the new slot (left as it was: callers overwrite every field they use).
    T* push() {
        if (full()) return nullptr;
        ++size_;
        return &back();
    }
    void pop() {
        head_ = (head_ + 1) % slots_.size();
        --size_;
    }
    void pop_back() { --size_; }
    void clear() {
        head_ = 0;
        size_ = 0;
    }

  private:
    std::vector<T> slots_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace insert::softverbs
