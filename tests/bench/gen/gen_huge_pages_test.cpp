// Where insert-gen's big tables get their 2 MiB pages (bench/gen/huge_vector.hpp): from the
// reserved hugetlb pool only while it keeps room for DPDK, and then really as hugetlb pages.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "bench/gen/huge_vector.hpp"

namespace insert::gen {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(GenHugePages, pool_room_counts_pages_not_promised_elsewhere) {
    // 2 MiB plus 512 MiB to keep: 257 pages.
    EXPECT_TRUE(hugetlb_pool_has_room(257, 0, 2 * kMiB, 512 * kMiB));
    EXPECT_FALSE(hugetlb_pool_has_room(256, 0, 2 * kMiB, 512 * kMiB));
    // A page reserved by another mapping is free but not available.
    EXPECT_FALSE(hugetlb_pool_has_room(257, 1, 2 * kMiB, 512 * kMiB));
    EXPECT_TRUE(hugetlb_pool_has_room(300, 43, 2 * kMiB, 512 * kMiB));
    // Lengths round up to whole pages.
    EXPECT_TRUE(hugetlb_pool_has_room(2, 0, 3 * kMiB, 0));
    EXPECT_FALSE(hugetlb_pool_has_room(1, 0, 3 * kMiB, 0));
    // No pool on this machine (sysfs unreadable), or nothing asked for.
    EXPECT_FALSE(hugetlb_pool_has_room(-1, 0, 2 * kMiB, 0));
    EXPECT_FALSE(hugetlb_pool_has_room(10, -1, 2 * kMiB, 0));
    EXPECT_FALSE(hugetlb_pool_has_room(10, 0, 0, 0));
}

TEST(GenHugePages, pool_refuses_what_it_must_keep) {
    // No machine has a pool of 2^50 bytes: the generator falls back to ordinary pages.
    EXPECT_EQ(map_from_hugetlb_pool(2 * kMiB, std::size_t{1} << 50), nullptr);
}

// The smaps block of the mapping that starts at `p`.
std::string smaps_of(const void* p) {
    std::ifstream in("/proc/self/smaps");
    std::ostringstream start;
    start << std::hex << reinterpret_cast<uintptr_t>(p) << '-';
    std::string line, block;
    bool inside = false;
    while (std::getline(in, line)) {
        // "start-end perms ...": a range before the first space (field lines have none).
        const bool header = !line.empty() && line.find('-') < line.find(' ');
        if (header) {
            if (inside) break;
            inside = line.rfind(start.str(), 0) == 0;
        }
        if (inside) block += line + "\n";
    }
    return block;
}

TEST(GenHugePages, pool_pages_are_hugetlb_and_zero) {
    // The test command reserves the pool (scripts/setup.sh); keeping nothing back, one page
    // must be available even with DPDK tests running beside this one.
    void* p = map_from_hugetlb_pool(4 * kMiB, 0);
    ASSERT_NE(p, nullptr) << "no 2 MiB hugepage free: scripts/setup.sh reserves the pool";
    auto* bytes = static_cast<unsigned char*>(p);
    for (std::size_t i = 0; i < 4 * kMiB; i += 4096) ASSERT_EQ(bytes[i], 0) << i;
    std::memset(bytes, 0xab, 4 * kMiB);
    const std::string block = smaps_of(p);
    EXPECT_NE(block.find("KernelPageSize:     2048 kB"), std::string::npos) << block;
    EXPECT_NE(block.find("Private_Hugetlb:    4096 kB"), std::string::npos) << block;
    EXPECT_EQ(::munmap(p, 4 * kMiB), 0);
}

TEST(GenHugePages, vector_data_survives_growth_across_page_sources) {
    // Grows from the ordinary allocator through 2 MiB mappings (pool or transparent).
    HugeVector<uint64_t> v;
    for (uint64_t i = 0; i < 3'000'000; ++i) v.push_back(i * 2654435761u);
    for (uint64_t i = 0; i < v.size(); i += 997) ASSERT_EQ(v[i], i * 2654435761u) << i;
    ZeroedArray<uint64_t> z(1'000'000);
    for (std::size_t i = 0; i < z.size(); i += 512) ASSERT_EQ(z[i], 0u) << i;
}

}  // namespace
}  // namespace insert::gen
