// One live input stream - a pipe, a FIFO, standard input, a regular file read as a stream or
// a --listen connection - read without blocking, handing on its whole lines. A line longer
// than --max-line ends the stream (the lines before it are handed on): a producer that
// never sends a newline costs at most that much memory, not all of it. The buffer holds
// at most the longest line allowed and one read, and is given back when the stream ends.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "correlator/input/ingest.hpp"

namespace insert::correlate {

class StreamSource {
  public:
    enum class Read { more, ended, too_long };
    // The whole lines at the start of the buffer (`bytes`, readable SIMDJSON_PADDING bytes
    // beyond them); `unterminated`: the stream ended in the middle of the last one.
    using Deliver = std::function<void(const char* data, std::size_t bytes, bool unterminated)>;

    StreamSource(std::string name, int fd, std::size_t max_line, pid_t peer = 0);

    // Reads what is there. `too_long`: the stream was closed at its line next_line().
    Read read(const Deliver& deliver);
    void close();

    const std::string& name() const { return name_; }
    int fd() const { return fd_; }
    pid_t peer() const { return peer_; }  // a --listen connection's process, 0 if unknown
    uint64_t next_line() const { return next_line_; }
    IngestCounts counts;   // what its lines held
    std::string producer;  // its /metrics label (run_metrics.hpp ProducerState)
    void advance(uint64_t lines) { next_line_ += lines; }

  private:
    // Hands on the whole lines (all the bytes at the end of the stream) and keeps the rest.
    void hand_on(const Deliver& deliver, bool ended);
    // Lines ended in the bytes from `from` on; false when one (or the one still open) is
    // longer than the limit, with line_start_ at its start.
    bool scan(std::size_t from);

    std::string name_;
    int fd_ = -1;
    pid_t peer_ = 0;
    std::size_t max_line_;
    uint64_t next_line_ = 1;
    std::unique_ptr<char[]> buffer_;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
    std::size_t line_start_ = 0;  // where the line still open starts
};

}  // namespace insert::correlate
