// An allocator for the correlator's big record arrays (millions of records, hundreds of
// MB). Storage of 2 MiB and more comes from the reserved hugetlb pool while it keeps room
// for DPDK (dataplane/common/hugetlb_pool.hpp): in a VM that reports freed memory to its
// host, fresh memory costs ~1-1.8 ms per MB at first touch and pool pages ~0.15 ms, and the
// decoded records of a run are its largest first touch - without the pool, a seventh of a
// one-thread run went to it (docs/performance.md, "Hugetlb pages and the VM's first touch").
// Otherwise the storage is 2 MiB-aligned and advised to transparent huge pages, so that its
// first touch takes one page fault per 2 MiB instead of one per 4 KiB (where THP is off the
// advice is ignored).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "dataplane/common/hugetlb_pool.hpp"

namespace insert::correlate {

namespace huge_storage {

inline constexpr std::size_t kHuge = std::size_t{2} << 20;

// `bytes` >= kHuge; from the pool when it keeps `keep_bytes` free afterwards. Throws
// std::bad_alloc when there is no memory.
void* allocate(std::size_t bytes, std::size_t keep_bytes = common::kHugetlbPoolKeepBytes);
// `bytes` as given to allocate().
void deallocate(void* p, std::size_t bytes) noexcept;
// Whether `p` (from allocate()) is on pages of the hugetlb pool (for the tests).
bool from_pool(const void* p);

}  // namespace huge_storage

template <typename T>
struct HugeAllocator {
    using value_type = T;

    HugeAllocator() noexcept = default;
    template <typename U>
    HugeAllocator(const HugeAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < huge_storage::kHuge) return static_cast<T*>(::operator new(bytes));
        return static_cast<T*>(huge_storage::allocate(bytes));
    }
    void deallocate(T* p, std::size_t n) noexcept {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < huge_storage::kHuge)
            ::operator delete(p);
        else
            huge_storage::deallocate(p, bytes);
    }
    template <typename U>
    bool operator==(const HugeAllocator<U>&) const noexcept {
        return true;
    }
};

template <typename T>
using HugeVector = std::vector<T, HugeAllocator<T>>;

}  // namespace insert::correlate
