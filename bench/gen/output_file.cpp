#include "bench/gen/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace insert::gen {

int OutputFile::open(const std::string& path, mode_t mode) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    if (fd_ < 0) return fd_;
    struct stat st {};
    regular_ = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
    prealloc_ = regular_;
    // The old file's blocks are allocated (or reserved) already; fallocate beyond them only.
    allocated_ = regular_ ? static_cast<uint64_t>(st.st_size) : 0;
    return fd_;
}

void OutputFile::extend(uint64_t end) {
    const uint64_t to = end + kMargin + kStep;
    if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(allocated_),
                    static_cast<off_t>(to - allocated_)) != 0) {
        prealloc_ = false;  // not supported here: not tried again
        return;
    }
    allocated_ = to;
}

bool OutputFile::finish(uint64_t size) {
    // Truncating to the final size also frees the blocks preallocated beyond it (ext4, XFS).
    return !regular_ || ::ftruncate(fd_, static_cast<off_t>(size)) == 0;
}

}  // namespace insert::gen
