// Where JSON Lines go: stdout, a file, or a Unix stream socket the correlator listens on
// (--unix). The socket is insert-correlate's --listen, which may not be up yet, go away or
// restart: the records go through UnixLineSender (dataplane/common) - retried with backoff
// from the start, reconnected, kept in a bounded buffer (--unix-buffer) while it is away,
// dropped and counted past that (trace_stats' "unix"), never half a line. With --nats they
// also go to NATS JetStream (NatsPublisher, dataplane/common; docs/scale-out.md), by host
// partition, whatever happens to the bus: the file or socket never waits for it.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "dataplane/common/nats_publisher.hpp"
#include "dataplane/common/unix_line_sender.hpp"
#include "hosttrace/trace_options.hpp"

namespace insert::hosttrace {

class OutputSink {
  public:
    // --output ("-" is stdout), or --unix instead, keeping up to --unix-buffer bytes while
    // it is away; and --nats besides. nullptr with `error` when the file cannot be written,
    // the path cannot name a socket or the NATS configuration cannot work (a collector or a
    // bus that is not up yet is not an error: it is said, and tried again).
    static std::unique_ptr<OutputSink> open(const TraceOptions& options, std::string& error);
    ~OutputSink();
    OutputSink(const OutputSink&) = delete;
    OutputSink& operator=(const OutputSink&) = delete;

    // Whole lines, each ending in a newline. False once the destination failed (disk full,
    // reader gone); a socket never fails: what it cannot take is kept or counted.
    bool write(std::string_view lines);
    // Writes out what is buffered; a socket also reconnects when it is time, and the bus's
    // batches that waited long enough are sealed.
    bool flush();
    // --unix: connections made and lines dropped so far (null for a file).
    const UnixLineSender* socket() const { return socket_.get(); }

  private:
    OutputSink() = default;
    FILE* file_ = nullptr;
    bool owns_file_ = false;
    std::unique_ptr<UnixLineSender> socket_;
    std::unique_ptr<NatsPublisher> nats_;
    bool failed_ = false;
};

}  // namespace insert::hosttrace
