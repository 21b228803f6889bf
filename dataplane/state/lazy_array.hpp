// A fixed array in anonymous memory that the kernel zero-fills page by page on first touch.
// The state tables are sized for a million endpoints per worker, but a replay of a small
// capture touches a few pages: allocating with `new T[n]()` would fault in (and zero) the
// whole gigabyte before the first packet. Transparent huge pages are requested because the
// hot path reads these tables at random: with 4 KB pages nearly every table access would
// also miss the TLB and walk the (on a VM, nested) page tables.
//
// A live appliance locks its future memory (mlockall MCL_FUTURE, pipeline/resident_memory)
// so that the tables are populated at creation instead. A locked mapping is populated by
// mmap() itself, before madvise() could ask for huge pages, so the mapping is made
// inaccessible first (nothing to populate), marked for huge pages, and only then opened:
// mprotect() populates a locked private mapping that becomes writable, now with huge pages.
// Unlocked, the same three calls leave the memory lazy as before.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <type_traits>

namespace insert::state {

template <typename T>
class LazyArray {
    static_assert(std::is_trivially_destructible_v<T>, "slots are never destroyed one by one");

  public:
    explicit LazyArray(std::size_t n) : bytes_(n * sizeof(T)) {
        if (bytes_ == 0) return;
        void* p =
            mmap(nullptr, bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return;
        madvise(p, bytes_, MADV_HUGEPAGE);
        if (mprotect(p, bytes_, PROT_READ | PROT_WRITE) != 0) {
            munmap(p, bytes_);
            return;
        }
        data_ = static_cast<T*>(p);
    }
    ~LazyArray() {
        if (data_) munmap(data_, bytes_);
    }
    LazyArray(const LazyArray&) = delete;
    LazyArray& operator=(const LazyArray&) = delete;

    bool valid() const { return data_ != nullptr || bytes_ == 0; }  // an empty one is fine
    std::size_t memory_bytes() const { return bytes_; }
    T& operator[](std::size_t i) { return data_[i]; }
    const T& operator[](std::size_t i) const { return data_[i]; }
    T* get() { return data_; }
    const T* get() const { return data_; }
    // Gives the pages back to the kernel; they read as zeroes (and are zero-filled again)
    // on the next touch.
    void discard() {
        if (data_) madvise(data_, bytes_, MADV_DONTNEED);
    }

  private:
    std::size_t bytes_;
    T* data_ = nullptr;
};

}  // namespace insert::state
