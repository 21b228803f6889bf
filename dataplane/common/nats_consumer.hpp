// The consumers' side of the bus (insert-correlate --nats; docs/scale-out.md "The
// consumers"): the partitions a process holds, each read through a durable JetStream pull
// consumer of the stream PREFIX - `PREFIX-correlate-pK`, filtering PREFIX.part.K, explicit
// acknowledgements. A partition is taken (add()) when the process gets its lease
// (nats_leases.hpp) - at the start, or over from an instance that died or handed it over -
// and its consumer is then made anew, from the partition's first message: the join of a
// partition is rebuilt from all of its input (its QPs', MRs' and processes' lifetimes,
// baselines, usual origins), and what the previous owner published already is recognised
// by the run (correlator/run) and not published again.
//
// A thread per partition fetches (blocking up to half a second, so that the run's own
// thread never waits on the bus) and queues the messages; the run's thread polls fd(),
// takes them in the order fetched, and acknowledges each once it is done with it. What is
// fetched and not yet taken is bounded (`buffer_bytes`): the fetching threads wait for
// room, and the bus keeps the rest.
//
// The bus away - not up at the start, lost, the stream not there yet, or made for another
// partition count - is said once (again when the reason changes, and when it is back);
// the client library reconnects with backoff (0.1 s doubling to 2 s), the stream and the
// consumers are looked at again with the same backoff, and the run goes on meanwhile (its
// windows, its other outputs). A stream made for another partition count is refused: its
// messages would be joined in the wrong places.
//
// Without libnats at build time create() refuses with one line (nats_available() false).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace insert {

struct NatsConsumerConfig {
    std::vector<std::string> servers;  // nats://host:port, one or more (a cluster)
    std::string prefix = "insert";     // the stream's name; subjects PREFIX.part.K
    unsigned partitions = 8;           // the deployment's count, checked against the stream's
    std::vector<unsigned> owned;       // consumed from the start (more: add()), each < partitions
    std::string client;                // the connection's name on the bus
    std::string label;                 // starts every stderr line ("insert-correlate: --nats URL")
    std::size_t buffer_bytes = 64u << 20;  // fetched and not yet taken, at most (about)
};

// The durable consumer of partition `partition`: PREFIX-correlate-pK.
std::string durable_consumer_name(std::string_view prefix, unsigned partition);

// One message of a partition as fetched, until it is acknowledged or dropped (without an
// acknowledgement the bus delivers it again, after the consumer's acknowledgement wait).
class BusMessage {
  public:
    BusMessage() = default;
    BusMessage(BusMessage&& other) noexcept;
    BusMessage& operator=(BusMessage&& other) noexcept;
    BusMessage(const BusMessage&) = delete;
    BusMessage& operator=(const BusMessage&) = delete;
    ~BusMessage();

    unsigned partition() const { return partition_; }  // the consumer's that fetched it
    uint64_t stream_seq() const { return stream_seq_; }
    uint64_t delivered() const { return delivered_; }  // 1: the first delivery
    std::string_view subject() const;
    std::string_view data() const;
    // A header's value; nullopt when the message has no such header.
    std::optional<std::string_view> header(const char* key) const;

  private:
    friend class NatsConsumer;
    void* msg_ = nullptr;  // natsMsg
    unsigned partition_ = 0;
    uint64_t stream_seq_ = 0;
    uint64_t delivered_ = 0;
};

class NatsConsumer {
  public:
    struct Counts {
        uint64_t fetched = 0;  // messages
        uint64_t acked = 0;
        uint64_t fetched_bytes = 0;
        uint64_t connects = 0;  // connections made to the bus (1: never lost)
    };

    // Null with `error` (one line) when the configuration cannot work: no libnats, a bad
    // prefix or server, no partition or one out of range.
    static std::unique_ptr<NatsConsumer> create(const NatsConsumerConfig& config,
                                                std::string& error);
    ~NatsConsumer();
    NatsConsumer(const NatsConsumer&) = delete;
    NatsConsumer& operator=(const NatsConsumer&) = delete;

    // Connects in the background and starts a fetching thread per partition of `owned`.
    void start();
    // Starts consuming partition `k` from its first message (its consumer made anew).
    void add(unsigned k);
    // Stops consuming partition `k`; what was fetched of it and not taken is dropped.
    void remove(unsigned k);
    // Readable while messages wait to be taken (an eventfd).
    int fd() const;
    // Appends the messages waiting, in the order fetched (per partition: the stream's).
    void take(std::vector<BusMessage>& out);
    // Tells the bus `message` is done with (it is not delivered again) and drops it.
    void ack(BusMessage& message);
    // Stops fetching (within half a second); what was fetched and not taken is handed back
    // (a negative acknowledgement): the bus delivers it again, at once, to the next process
    // that binds the consumers.
    void stop();
    Counts counts() const;

    struct Impl;

  private:
    explicit NatsConsumer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace insert
