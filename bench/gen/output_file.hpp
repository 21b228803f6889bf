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

}  // namespace insert::gen
