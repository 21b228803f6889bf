// Every message of a JetStream stream, read once (insert-report --nats: the merged view of
// the correlators' output stream; docs/scale-out.md "The merged view"): a snapshot from the
// stream's first message to the last one present when the reading started, in stream
// order, each fetched by the JetStream API's message get - no consumer is made, so the
// stream and its consumers are left as they were. Messages deleted meanwhile are passed
// over.
//
// A bus that cannot be reached is waited for with backoff (0.1 s doubling to 2 s) up to
// `wait`, said once on stderr when it is first missed; a connection lost in the middle is
// waited for the same way, and the reading goes on from the message it had reached.
//
// Without libnats at build time read_stream() refuses with one line (status no_client).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace insert {

struct StreamReadConfig {
    std::vector<std::string> servers;  // nats://host:port, one or more (a cluster)
    std::string stream;                // the stream's name
    std::string client;                // the connection's name on the bus
    std::string label;                 // starts every stderr line ("insert-report: --nats URL")
    std::chrono::milliseconds wait{10'000};  // the bus away: given up after this long
};

// One message of the stream, valid during the callback.
class StreamMessage {
  public:
    uint64_t seq() const { return seq_; }
    std::string_view subject() const;
    std::string_view data() const;
    // A header's value; nullopt when the message has no such header.
    std::optional<std::string_view> header(const char* key) const;

  private:
    friend struct StreamReading;
    const void* msg_ = nullptr;  // natsMsg
    uint64_t seq_ = 0;
};

struct StreamReadResult {
    enum class Status {
        ok,           // every message present at the start was handed over
        unreachable,  // no server answered within `wait` (error names the servers)
        no_stream,    // the bus has no such stream
        failed,       // anything else: a bad configuration, the bus lost for good
        no_client,    // built without libnats
    };
    Status status = Status::failed;
    uint64_t messages = 0;                 // handed to the callback
    uint64_t first_seq = 0, last_seq = 0;  // the snapshot's range (0, 0: an empty stream)
    std::string error;                     // one line, when not ok
};

StreamReadResult read_stream(const StreamReadConfig& config,
                             const std::function<void(const StreamMessage&)>& each);

}  // namespace insert
