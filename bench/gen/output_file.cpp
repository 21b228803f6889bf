#include "bench/gen/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace insert::gen {

namespace {

// Smaller files truncate quickly: not worth a thread.
constexpr off_t kReplaceFrom = off_t{16} << 20;

}  // namespace

int OutputFile::open(const std::string& path, mode_t mode) {
    constexpr int kFlags = O_WRONLY | O_CREAT | O_CLOEXEC;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
        st.st_size >= kReplaceFrom && !reaper_.joinable()) {
        // O_PATH: holds the inode without needing read permission; O_NOFOLLOW: if a symlink
        // took the name since lstat(), this fails and the ordinary path below is taken.
        const int old = ::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat same {};
        if (old >= 0 && ::fstat(old, &same) == 0 && same.st_ino == st.st_ino &&
            same.st_dev == st.st_dev && ::unlink(path.c_str()) == 0) {
            const int fd = ::open(path.c_str(), kFlags | O_EXCL, mode);
            if (fd >= 0) {
                ::fchmod(fd, st.st_mode & 07777);
                reaper_ = std::jthread([old] { ::close(old); });
                return fd;
            }
        }
        if (old >= 0) ::close(old);
    }
    return ::open(path.c_str(), kFlags | O_TRUNC, mode);
}

void Preallocation::extend(int fd, uint64_t end) {
    const uint64_t to = end + kMargin + kStep;
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(allocated_),
                    static_cast<off_t>(to - allocated_)) != 0) {
        enabled_ = false;
        return;
    }
    allocated_ = to;
}

bool Preallocation::release(int fd, uint64_t size) {
    // Truncating to the same size frees the blocks allocated beyond it (ext4, XFS).
    return allocated_ == 0 || ::ftruncate(fd, static_cast<off_t>(size)) == 0;
}

}  // namespace insert::gen
