// Creating an output file so that overwriting a big earlier output does not stall the run.
//
// open(O_TRUNC) on last run's 400 MB pcap frees its page cache and blocks on the spot, and
// waits for the pages still being written back to disk: 0.6-0.9 s measured for `large`'s
// two outputs, longer than the rest of the run's set-up. Instead, a large existing regular
// file is unlinked while a descriptor keeps its inode alive, a new file takes its name, and
// a background thread closes that descriptor: the old inode is torn down there, during the
// run. The new file gets the old one's permission bits; a file with other hard links, a
// symlink, a device (/dev/null) or a small file is opened with O_TRUNC as usual.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <thread>

namespace insert::gen {

class OutputFile {
  public:
    OutputFile() = default;
    ~OutputFile() = default;  // joins the thread tearing down a replaced file, if any
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    // As open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode): a descriptor, or -1
    // with errno set.
    int open(const std::string& path, mode_t mode);

  private:
    std::jthread reaper_;
};

// Keeps a file's blocks allocated ahead of what has been written to it (fallocate with
// FALLOC_FL_KEEP_SIZE, kStep at a time), so that ext4 does not have to reserve a delayed
// allocation, block by block, in every write(2): ~25% of the kernel's CPU time for a
// buffered write of 400 MB in 256 KiB pieces (measured, 6.18), ~0.05 s on `large`. The
// blocks beyond the final size are given back by release(). Best effort: where fallocate
// is not supported (pipes, /dev/null, some file systems) it is not tried again.
class Preallocation {
  public:
    // `end`: the bytes handed to the file so far.
    void ahead(int fd, uint64_t end) {
        if (end + kMargin > allocated_ && enabled_) extend(fd, end);
    }
    // The file is complete at `size` bytes (everything written): frees what lies beyond.
    // False with errno if that failed.
    bool release(int fd, uint64_t size);

  private:
    static constexpr uint64_t kStep = uint64_t{32} << 20;
    static constexpr uint64_t kMargin = uint64_t{4} << 20;  // > any one write
    void extend(int fd, uint64_t end);

    uint64_t allocated_ = 0;
    bool enabled_ = true;
};

}  // namespace insert::gen
