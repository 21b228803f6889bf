// std::vector storage on 2 MiB pages, for the generator's big tables.
//
// With 100k QPs the simulator and the truth observer touch a few hundred MB of per-message
// and per-endpoint state at random; with 4 KiB pages nearly every such access also misses
// the TLB. Backing the tables with 2 MiB pages took ~20% off `large`'s CPU time, and the
// kernel faults in 512 times fewer pages.
//
// The pages come from the reserved hugetlb pool when it has room to spare
// (dataplane/common/hugetlb_pool.hpp: why, in a VM that reports freed memory to its host),
// otherwise as transparent huge pages (madvise(MADV_HUGEPAGE); ignored where huge pages are
// disabled). On `large` (~200 MB of tables) about a quarter of the whole run's CPU time
// went to faulting in fresh memory before (docs/insert-gen.md).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "dataplane/common/hugetlb_pool.hpp"

namespace insert::gen {

using common::hugetlb_pool_has_room;
using common::kHugetlbPageBytes;
using common::kHugetlbPoolKeepBytes;
using common::map_from_hugetlb_pool;

template <typename T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr std::size_t kHugePage = kHugetlbPageBytes;
    // Smaller blocks come from the ordinary allocator (at most half a huge page is wasted).
    static constexpr std::size_t kMinBytes = kHugePage / 2;

    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kMinBytes) return std::allocator<T>().allocate(n);
        const std::size_t len = round_up(bytes);
        if (void* pool = map_from_hugetlb_pool(len)) return static_cast<T*>(pool);
        // Over-map by one huge page, then trim to a 2 MiB-aligned range.
        void* raw = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        const auto start = reinterpret_cast<std::uintptr_t>(raw);
        const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
        if (aligned > start) ::munmap(raw, aligned - start);
        const std::uintptr_t end = start + len + kHugePage;
        if (end > aligned + len)
            ::munmap(reinterpret_cast<void*>(aligned + len), end - aligned - len);
        ::madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);
        return reinterpret_cast<T*>(aligned);
    }

    void deallocate(T* p, std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kMinBytes)
            std::allocator<T>().deallocate(p, n);
        else
            ::munmap(p, round_up(bytes));
    }

    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const {
        return true;
    }

  private:
    static std::size_t round_up(std::size_t bytes) {
        return (bytes + kHugePage - 1) & ~(kHugePage - 1);
    }
};

template <typename T>
using HugeVector = std::vector<T, HugePageAllocator<T>>;

// A fixed-size table whose elements start as all-zero bytes, with nothing written up front:
// memory fresh from the kernel is zero already, so a page is zeroed once, when a thread
// first touches it - not by a value-initializing constructor before the run (on `large`,
// the truth's per-message table was 35 MB of memset on the simulator's critical path).
template <typename T>
class ZeroedArray {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                  "elements are created as zero bytes and never destroyed");

  public:
    explicit ZeroedArray(std::size_t n) : n_(n) {
        if (n * sizeof(T) < HugePageAllocator<T>::kMinBytes)
            data_ = static_cast<T*>(std::calloc(n ? n : 1, sizeof(T)));
        else
            data_ = HugePageAllocator<T>().allocate(n);  // anonymous mmap: zero pages
        if (!data_) throw std::bad_alloc();
    }
    ~ZeroedArray() {
        if (n_ * sizeof(T) < HugePageAllocator<T>::kMinBytes)
            std::free(data_);
        else
            HugePageAllocator<T>().deallocate(data_, n_);
    }
    ZeroedArray(const ZeroedArray&) = delete;
    ZeroedArray& operator=(const ZeroedArray&) = delete;

    T& operator[](std::size_t i) { return data_[i]; }
    const T& operator[](std::size_t i) const { return data_[i]; }
    std::size_t size() const { return n_; }

  private:
    std::size_t n_;
    T* data_;
};

}  // namespace insert::gen
