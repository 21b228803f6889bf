#include "hosttrace/proc_maps.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace insert::hosttrace {

std::optional<std::vector<Mapping>> read_maps(pid_t pid, std::string& error) {
    const std::string file = "/proc/" + std::to_string(pid) + "/maps";
    std::ifstream in(file);
    if (!in) {
        error = "pid " + std::to_string(pid) + ": no such process";
        return std::nullopt;
    }
    std::vector<Mapping> maps;
    std::string line;
    while (std::getline(in, line)) {
        // start-end perms offset dev inode [path]
        Mapping m;
        char perms[8] = {};
        unsigned dev_major = 0, dev_minor = 0;
        int consumed = 0;
        if (std::sscanf(line.c_str(),
                        "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &m.start,
                        &m.end, perms, &m.file_offset, &dev_major, &dev_minor, &m.inode,
                        &consumed) < 7)
            continue;
        m.executable = perms[2] == 'x';
        if (consumed > 0 && static_cast<size_t>(consumed) < line.size())
            m.path = line.substr(consumed);
        // A file replaced on disk shows as "PATH (deleted)": still attachable through
        // map_files, but not through PATH, so such mappings are left out.
        if (m.inode == 0 || m.path.empty() || m.path.front() != '/' ||
            m.path.ends_with(" (deleted)"))
            m.path.clear();
        maps.push_back(std::move(m));
    }
    return maps;
}

std::optional<FileLocation> locate(const std::vector<Mapping>& maps, uint64_t addr) {
    for (const Mapping& m : maps)
        if (addr >= m.start && addr < m.end && m.executable && !m.path.empty())
            return FileLocation{m.path, addr - m.start + m.file_offset};
    return std::nullopt;
}

std::optional<std::string> find_mapped_library(const std::vector<Mapping>& maps,
                                               const std::string& prefix) {
    for (const Mapping& m : maps) {
        if (m.path.empty()) continue;
        const auto slash = m.path.rfind('/');
        const std::string base = m.path.substr(slash + 1);
        if (base.starts_with(prefix)) return m.path;
    }
    return std::nullopt;
}

bool read_process_memory(pid_t pid, uint64_t addr, void* out, size_t len) {
    const std::string file = "/proc/" + std::to_string(pid) + "/mem";
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t got = ::pread(fd, out, len, static_cast<off_t>(addr));
    ::close(fd);
    return got == static_cast<ssize_t>(len);
}

std::string path_in_process_root(pid_t pid, const std::string& path) {
    const std::string rooted = "/proc/" + std::to_string(pid) + "/root" + path;
    struct stat st;
    if (::stat(rooted.c_str(), &st) == 0) return rooted;
    return path;
}

bool process_alive(pid_t pid) {
    // A killed process stays a zombie until reaped; its address space is already gone.
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!in || !std::getline(in, stat)) return false;
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
    const char state = stat[paren + 2];
    return state != 'Z' && state != 'X';
}

std::vector<pid_t> list_pids() {
    std::vector<pid_t> pids;
    DIR* d = ::opendir("/proc");
    if (!d) return pids;
    while (dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long v = std::strtol(e->d_name, &end, 10);
        if (end && *end == 0 && v > 0) pids.push_back(static_cast<pid_t>(v));
    }
    ::closedir(d);
    return pids;
}

}  // namespace insert::hosttrace
