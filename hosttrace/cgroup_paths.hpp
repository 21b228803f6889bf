// Cgroup v2 ids to the paths people know a tenant by (issue 37 item 6). An event carries the
// cgroup id the kernel gives (bpf_get_current_cgroup_id: the inode of the cgroup's
// directory); the tracer announces each id it sees once, with its path under the cgroup2
// mount, in a `cgroup` record. Resolving walks the hierarchy: done at the first sight of an
// id, never per event, and at most once per second for ids that are gone (a cgroup removed
// before it was looked up has no path: null).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace insert::hosttrace {

class CgroupPaths {
  public:
    // `root`: the cgroup2 mount (its directory is the path "/"); empty: the one in
    // /proc/self/mounts (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid hierarchy).
    explicit CgroupPaths(std::string root = {});

    // True the first time `id` is asked about: the caller then writes its `cgroup` record
    // with path_of(id).
    bool first_sight(uint64_t id) { return announced_.emplace(id, true).second; }
    // The path of cgroup `id` ("/", "/system.slice/x.service"), nullopt if none is found.
    std::optional<std::string> path_of(uint64_t id, uint64_t now_ns);

  private:
    void rescan();

    std::string root_;
    std::unordered_map<uint64_t, std::string> paths_;  // inode -> path, from the last scan
    std::unordered_map<uint64_t, bool> announced_;
    uint64_t last_scan_ns_ = 0;
    bool scanned_ = false;
};

}  // namespace insert::hosttrace
