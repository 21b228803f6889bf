#include "hosttrace/cgroup_paths.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace insert::hosttrace {

namespace {

constexpr uint64_t kRescanGapNs = 1'000'000'000;

std::string cgroup2_mount() {
    std::ifstream mounts("/proc/self/mounts");
    std::string device, dir, type, rest;
    while (mounts >> device >> dir >> type && std::getline(mounts, rest))
        if (type == "cgroup2") return dir;
    return "/sys/fs/cgroup";
}

}  // namespace

CgroupPaths::CgroupPaths(std::string root)
    : root_(root.empty() ? cgroup2_mount() : std::move(root)) {}

std::optional<std::string> CgroupPaths::path_of(uint64_t id, uint64_t now_ns) {
    auto at = paths_.find(id);
    if (at == paths_.end() && (!scanned_ || now_ns - last_scan_ns_ >= kRescanGapNs)) {
        rescan();
        last_scan_ns_ = now_ns;
        at = paths_.find(id);
    }
    if (at == paths_.end()) return std::nullopt;
    return at->second;
}

// Every directory under the mount: a cgroup. Errors (a cgroup removed mid-walk, no
// permission) end that branch only.
void CgroupPaths::rescan() {
    namespace fs = std::filesystem;
    scanned_ = true;
    paths_.clear();
    struct stat st {};
    if (::stat(root_.c_str(), &st) == 0) paths_[st.st_ino] = "/";
    std::error_code ec;
    fs::recursive_directory_iterator it(root_, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code type_ec;
        if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) continue;
        if (::stat(it->path().c_str(), &st) != 0) continue;
        paths_[st.st_ino] = "/" + fs::relative(it->path(), root_, type_ec).string();
    }
}

}  // namespace insert::hosttrace
