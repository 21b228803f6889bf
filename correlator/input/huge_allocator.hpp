// An allocator for the correlator's big record arrays (millions of records, hundreds of
// MB): storage of 2 MiB and more is 2 MiB-aligned and advised to transparent huge pages,
// so that its first touch takes one page fault per 2 MiB instead of one per 4 KiB. On
// these VMs (THP in `madvise` mode) that halved the CPU time of ingesting a run
// (docs/performance.md, insert-correlate); where THP is off the advice is ignored.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace insert::correlate {

template <typename T>
struct HugeAllocator {
    using value_type = T;
    static constexpr std::size_t kHuge = std::size_t{2} << 20;

    HugeAllocator() noexcept = default;
    template <typename U>
    HugeAllocator(const HugeAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
        const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
        void* p = std::aligned_alloc(kHuge, rounded);
        if (!p) throw std::bad_alloc();
        ::madvise(p, rounded, MADV_HUGEPAGE);
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n * sizeof(T) < kHuge)
            ::operator delete(p);
        else
            std::free(p);
    }
    template <typename U>
    bool operator==(const HugeAllocator<U>&) const noexcept {
        return true;
    }
};

template <typename T>
using HugeVector = std::vector<T, HugeAllocator<T>>;

}  // namespace insert::correlate
