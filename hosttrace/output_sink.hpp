// Where JSON Lines go: stdout, a file, or a Unix stream socket the correlator listens on
// (--unix). The socket is insert-correlate's --listen, which may not be up yet, go away or
// restart: the records go through UnixLineSender (dataplane/common) - retried with backoff
// from the start, reconnected, kept in a bounded buffer (--unix-buffer) while it is away,
// dropped and counted past that (trace_stats' "unix"), never half a line.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "dataplane/common/unix_line_sender.hpp"

namespace insert::hosttrace {

class OutputSink {
  public:
    // `path` "-" is stdout; `unix_socket` non-empty sends there instead, keeping up to
    // `socket_buffer` bytes while it is away. nullptr with `error` when the file cannot be
    // written or the path cannot name a socket (a socket nobody listens on yet is not an
    // error: it is said, and tried again).
    static std::unique_ptr<OutputSink> open(const std::string& path, const std::string& unix_socket,
                                            std::size_t socket_buffer, std::string& error);
    ~OutputSink();
    OutputSink(const OutputSink&) = delete;
    OutputSink& operator=(const OutputSink&) = delete;

    // Whole lines, each ending in a newline. False once the destination failed (disk full,
    // reader gone); a socket never fails: what it cannot take is kept or counted.
    bool write(std::string_view lines);
    // Writes out what is buffered; a socket also reconnects when it is time.
    bool flush();
    // --unix: connections made and lines dropped so far (null for a file).
    const UnixLineSender* socket() const { return socket_.get(); }

  private:
    OutputSink() = default;
    FILE* file_ = nullptr;
    bool owns_file_ = false;
    std::unique_ptr<UnixLineSender> socket_;
    bool failed_ = false;
};

}  // namespace insert::hosttrace
