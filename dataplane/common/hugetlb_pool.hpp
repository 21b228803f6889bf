// Big arrays from the reserved 2 MiB hugetlb pool, while it keeps room for DPDK.
//
// In a virtual machine that returns freed guest memory to its host (free page reporting,
// as in this Firecracker guest: page_reporting_order=11), memory the kernel hands out
// afresh must be backed by the host again, page by page, as it is first touched: ~1-1.8 ms
// per MB here. Pages of the hugetlb pool stay backed once used (the pool holds them, they
// are never reported): ~0.15 ms per MB, the guest's own zeroing. insert-gen's tables
// (bench/gen/huge_vector.hpp) and insert-correlate's record arrays
// (correlator/input/huge_allocator.hpp) take their storage from here when they can.
//
// The pool is the one `scripts/setup.sh` reserves for DPDK: only what leaves
// kHugetlbPoolKeepBytes free is taken, so that a DPDK process started meanwhile still finds
// its memory. A mapping reserves its pages at mmap() (no MAP_NORESERVE), so a pool emptied
// by another process later cannot raise SIGBUS here.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdio>
#include <string>

namespace insert::common {

inline constexpr std::size_t kHugetlbPoolKeepBytes = std::size_t{512} << 20;
inline constexpr std::size_t kHugetlbPageBytes = std::size_t{2} << 20;

// Whether `len` bytes may come from a 2 MiB pool with `free_pages` free, `reserved_pages` of
// them promised to other mappings, and `keep_bytes` to be left available afterwards.
constexpr bool hugetlb_pool_has_room(long long free_pages, long long reserved_pages,
                                     std::size_t len, std::size_t keep_bytes) {
    if (free_pages < 0 || reserved_pages < 0) return false;  // no such pool here
    const long long available = free_pages - reserved_pages;
    const auto wanted =
        static_cast<long long>((len + keep_bytes + kHugetlbPageBytes - 1) / kHugetlbPageBytes);
    return available >= wanted && wanted > 0;
}

// Maps `len` bytes (a multiple of 2 MiB) from the pool if it has room for them and
// keep_bytes more; nullptr otherwise. Release with munmap(p, len).
inline void* map_from_hugetlb_pool(std::size_t len,
                                   std::size_t keep_bytes = kHugetlbPoolKeepBytes) {
    auto read_count = [](const char* path) -> long long {
        std::FILE* f = std::fopen(path, "r");
        if (!f) return -1;
        long long v = -1;
        if (std::fscanf(f, "%lld", &v) != 1) v = -1;
        std::fclose(f);
        return v;
    };
    const char* const dir = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
    const long long free_pages = read_count((std::string(dir) + "free_hugepages").c_str());
    const long long reserved = read_count((std::string(dir) + "resv_hugepages").c_str());
    if (!hugetlb_pool_has_room(free_pages, reserved, len, keep_bytes)) return nullptr;
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

}  // namespace insert::common
