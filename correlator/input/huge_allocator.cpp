#include "correlator/input/huge_allocator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace insert::correlate::huge_storage {

namespace {

// The pool's mappings are released with munmap, the others with free: which is which is
// remembered here. A run holds a handful of such arrays, so a list under a lock will do.
struct PoolMappings {
    std::mutex lock;
    std::vector<const void*> starts;
};

PoolMappings& pool_mappings() {
    static auto* m = new PoolMappings;  // never destroyed: arrays may outlive static ones
    return *m;
}

std::size_t rounded(std::size_t bytes) {
    return (bytes + kHuge - 1) / kHuge * kHuge;
}

}  // namespace

void* allocate(std::size_t bytes, std::size_t keep_bytes) {
    const std::size_t len = rounded(bytes);
    if (void* p = common::map_from_hugetlb_pool(len, keep_bytes)) {
        PoolMappings& m = pool_mappings();
        const std::lock_guard hold(m.lock);
        m.starts.push_back(p);
        return p;
    }
    void* p = std::aligned_alloc(kHuge, len);
    if (!p) throw std::bad_alloc();
    ::madvise(p, len, MADV_HUGEPAGE);
    return p;
}

void deallocate(void* p, std::size_t bytes) noexcept {
    {
        PoolMappings& m = pool_mappings();
        const std::lock_guard hold(m.lock);
        const auto at = std::find(m.starts.begin(), m.starts.end(), p);
        if (at != m.starts.end()) {
            m.starts.erase(at);
            ::munmap(p, rounded(bytes));
            return;
        }
    }
    std::free(p);
}

bool from_pool(const void* p) {
    PoolMappings& m = pool_mappings();
    const std::lock_guard hold(m.lock);
    return std::find(m.starts.begin(), m.starts.end(), p) != m.starts.end();
}

}  // namespace insert::correlate::huge_storage
