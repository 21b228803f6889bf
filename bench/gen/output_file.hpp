// An output file written front to back, made cheap to write again and again.
//
// insert-gen's outputs are usually written over last run's (`large`: a 392 MB pcap and a
// 276 MB truth file). Truncating them first - open(O_TRUNC) - frees their page cache on
// the spot and waits for pages still being written back (0.6-0.9 s measured), and a new
// file instead (unlink, tear the old inode down on a background thread) still
// pays for tearing down and building up the page cache: a fresh page per 4 KiB, its buffer
// head, ext4's delayed-allocation reservation. So an existing regular file is overwritten
// in place - its cached pages and blocks are reused, only the bytes are copied (half the
// kernel CPU time of a new file, measured for 400 MB) - and finish() cuts it to the new
// length. Growth beyond the old end gets its blocks allocated ahead (fallocate with
// FALLOC_FL_KEEP_SIZE, 32 MiB at a time: ext4 then skips the per-block reservation, ~25%
// of the kernel time of a buffered write of a new file); finish() gives back what is left
// beyond the end. Devices, pipes (/dev/null, /dev/stdout) are written as they are.
//
// Writers should hand over whole pages (multiples of 4 KiB from the start of the file),
// except at the end: a partial page of an old file that is not in the page cache would be
// read from disk before it is overwritten.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace insert::gen {

class OutputFile {
  public:
    static constexpr std::size_t kPage = 4096;

    // Opens `path` for writing (O_WRONLY | O_CREAT | O_CLOEXEC, no O_TRUNC), creating it with
    // `mode`: a descriptor, or -1 with errno set. The caller closes it after finish().
    int open(const std::string& path, mode_t mode);
    // `end` bytes have been or are about to be handed to the file.
    void ahead(uint64_t end) {
        if (end + kMargin > allocated_ && prealloc_) extend(end);
    }
    // All `size` bytes are written: cuts what is left of an older, longer file and the
    // blocks allocated beyond the end. False with errno if that failed.
    bool finish(uint64_t size);

  private:
    static constexpr uint64_t kStep = uint64_t{32} << 20;
    static constexpr uint64_t kMargin = uint64_t{4} << 20;
    void extend(uint64_t end);

    int fd_ = -1;
    bool regular_ = false;
    bool prealloc_ = false;
    uint64_t allocated_ = 0;  // bytes with blocks: the old file's, then preallocated
};

}  // namespace insert::gen
