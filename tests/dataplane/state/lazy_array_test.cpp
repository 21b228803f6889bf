// LazyArray's two lives: lazy (replay: nothing resident until touched) and, once the process
// has locked its future memory (live appliance, pipeline benchmark), populated at creation
// on transparent huge pages. The second is easy to lose silently: mlockall() populates a
// mapping inside mmap(), before madvise(MADV_HUGEPAGE), and the tables then sat on 4 KB
// pages (a TLB miss on nearly every random access) with nothing failing.
#include "dataplane/state/lazy_array.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace insert::state {
namespace {

constexpr std::size_t kBytes = 64u << 20;  // 32 huge pages

struct Residency {
    std::size_t rss_kb = 0;
    std::size_t huge_kb = 0;
    bool found = false;
};

// The Rss and AnonHugePages lines of the mapping that starts at `addr`.
Residency residency_of(const void* addr) {
    std::ifstream smaps("/proc/self/smaps");
    char start[32];
    std::snprintf(start, sizeof start, "%lx-", reinterpret_cast<unsigned long>(addr));
    Residency r;
    std::string line;
    bool in = false;
    while (std::getline(smaps, line)) {
        if (line.find('-') != std::string::npos && line.find(' ') > line.find('-') &&
            std::isxdigit(static_cast<unsigned char>(line[0]))) {
            in = line.rfind(start, 0) == 0;
            r.found |= in;
            continue;
        }
        if (!in) continue;
        std::istringstream fields(line);
        std::string name;
        std::size_t kb = 0;
        fields >> name >> kb;
        if (name == "Rss:") r.rss_kb = kb;
        if (name == "AnonHugePages:") r.huge_kb = kb;
    }
    return r;
}

bool transparent_huge_pages_available() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(f, modes);
    return modes.find("[never]") == std::string::npos && !modes.empty();
}

TEST(LazyArray, untouched_memory_is_not_resident) {
    LazyArray<uint64_t> a(kBytes / sizeof(uint64_t));
    ASSERT_TRUE(a.valid());
    const Residency before = residency_of(a.get());
    ASSERT_TRUE(before.found);
    EXPECT_EQ(before.rss_kb, 0u);
    a[12345] = 7;  // one touch faults in one page (4 KB or 2 MB), not the array
    const Residency after = residency_of(a.get());
    EXPECT_GT(after.rss_kb, 0u);
    EXPECT_LE(after.rss_kb, 2048u);
    EXPECT_EQ(a[12345], 7u);
    EXPECT_EQ(a[0], 0u);
}

// In a child process: mlockall() would lock the test binary's later memory too.
TEST(LazyArray, locked_process_gets_resident_huge_pages) {
    if (geteuid() != 0) GTEST_SKIP() << "mlockall of 64 MiB needs root (CI runs as root)";
    if (!transparent_huge_pages_available()) GTEST_SKIP() << "transparent huge pages disabled";
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (mlockall(MCL_FUTURE) != 0) _exit(10);
        LazyArray<uint64_t> a(kBytes / sizeof(uint64_t));
        if (!a.valid()) _exit(11);
        const Residency r = residency_of(a.get());
        if (!r.found) _exit(12);
        if (r.rss_kb != kBytes / 1024) _exit(13);  // populated at creation
        // Huge pages for all but the unaligned ends (the mapping need not start on 2 MB).
        if (r.huge_kb < kBytes / 1024 - 2 * 2048) _exit(14);
        if (a[kBytes / sizeof(uint64_t) - 1] != 0) _exit(15);  // zero-filled
        _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    // 13: not populated at creation; 14: populated on 4 KB pages.
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace insert::state
