// /proc/PID/maps and /proc/PID/mem: which library file a process maps, and where in that
// file an address of the process lies (uprobes attach to file offsets, not addresses).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace insert::hosttrace {

struct Mapping {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t file_offset = 0;
    bool executable = false;
    uint64_t inode = 0;
    std::string path;  // empty for anonymous mappings
};

struct FileLocation {
    std::string path;     // as the process sees it
    uint64_t offset = 0;  // file offset: what a uprobe attaches to
};

// nullopt with `error` when the process does not exist or its maps are unreadable.
std::optional<std::vector<Mapping>> read_maps(pid_t pid, std::string& error);

// The executable file mapping containing `addr`.
std::optional<FileLocation> locate(const std::vector<Mapping>& maps, uint64_t addr);

// Path of the first mapped file whose base name starts with `prefix` (e.g. "libibverbs.so").
std::optional<std::string> find_mapped_library(const std::vector<Mapping>& maps,
                                               const std::string& prefix);

// Reads `len` bytes at `addr` of process `pid`; false if any part is unreadable.
bool read_process_memory(pid_t pid, uint64_t addr, void* out, size_t len);

// A path of `path` that this process can open even when `pid` lives in another mount
// namespace (container): /proc/PID/root/PATH when that resolves, else `path`.
std::string path_in_process_root(pid_t pid, const std::string& path);

bool process_alive(pid_t pid);

// Every numeric entry of /proc.
std::vector<pid_t> list_pids();

}  // namespace insert::hosttrace
