#include "dataplane/tools/memory_budget.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace insert::tools {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The first number in `path`, or UINT64_MAX ("max", missing, unreadable).
uint64_t read_number(const char* path) {
    std::ifstream in(path);
    uint64_t v = 0;
    if (in >> v) return v;
    return UINT64_MAX;
}

}  // namespace

uint64_t available_memory_bytes() {
    uint64_t avail = UINT64_MAX;
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        uint64_t kb = 0;
        if (fields >> kb) avail = kb * 1024;
        break;
    }
    // cgroup v2: the limit of this process's group, less what it uses already.
    const uint64_t max = read_number("/sys/fs/cgroup/memory.max");
    const uint64_t current = read_number("/sys/fs/cgroup/memory.current");
    if (max != UINT64_MAX && current != UINT64_MAX)
        avail = std::min(avail, max > current ? max - current : 0);
    return avail;
}

bool memory_fits(uint64_t need, uint64_t available, bool resident) {
    const uint64_t headroom = resident ? std::max<uint64_t>(512 * kMiB, available / 8) : 0;
    return available > headroom && need <= available - headroom;
}

std::string format_bytes(uint64_t bytes) {
    char text[32];
    if (bytes >= (uint64_t{1} << 30))
        std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
    else
        std::snprintf(text, sizeof text, "%llu MiB",
                      static_cast<unsigned long long>((bytes + kMiB - 1) / kMiB));
    return text;
}

}  // namespace insert::tools
