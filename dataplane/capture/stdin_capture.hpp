// Standard input as a capture file: `tcpdump -w - | insert-dp replay -`, `zcat x.pcap.gz |
// insert-dp decode -`. The reader maps its captures (capture_file.hpp), so the stream is
// read to its end first, once per process, into an anonymous memory file that every later
// open of "-" maps as it would map a file. A stream that does not end (a live capture) is
// the job of `insert-dp monitor`, not of replay.
#pragma once

#include <string>

namespace insert::capture {

// A new descriptor of the memory file holding all of standard input, or -1 with `error`
// (stdin a terminal, a read error, no memory).
int stdin_capture_fd(std::string& error);

}  // namespace insert::capture
