// The producers' NATS JetStream output (insert-dp --nats, insert-trace --nats;
// docs/scale-out.md): their JSON Lines, partitioned by host (record_route.hpp) and batched
// (record_batcher.hpp), published to the subjects PREFIX.part.K of the stream PREFIX -
// created when it is missing - with publish acknowledgements.
//
// Two threads. The producer's own (insert-dp's exporter thread, insert-trace's reader)
// writes lines: it routes and batches them and hands sealed batches over under a mutex,
// once per batch, never blocking on the bus. The publisher's thread connects, makes sure
// of the stream, and publishes asynchronously (js_PublishMsgAsync) a bounded number of
// batches at a time; the acknowledgements come back on the client library's threads. A
// batch whose acknowledgement failed or timed out is published again with the same
// message id (Nats-Msg-Id: producer, partition, sequence), so that the stream keeps it
// once. Bounded buffering: the batches not yet acknowledged and the open ones together
// hold at most `buffer_bytes`; past that, records are dropped and counted (or, with
// `wait_when_full` - replay, where a file waits for us - the producer waits while the bus
// is reachable).
//
// The bus away - not up at the start, lost, or refusing the stream - is said on stderr
// once, and again when it is back (with what was dropped meanwhile); the client library
// reconnects with backoff (0.1 s doubling to 2 s), the stream is looked at again with the
// same backoff, and the producer keeps working: its other outputs never wait for the bus.
//
// Without libnats at build time a publisher cannot be made: create() refuses with one line
// (available() is false), so that the programs build anyway and refuse --nats.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace insert {

// Whether this build has libnats.
bool nats_available();

struct NatsConfig {
    std::vector<std::string> servers;  // nats://host:port, one or more (a cluster)
    std::string prefix = "insert";     // the stream's name; subjects PREFIX.part.K
    unsigned partitions = 8;           // K in 0 .. partitions-1: the deployment's count
    unsigned replicas = 1;             // of the stream, when this producer creates it; 0: as
    std::string replicas_of;           // this stream's (1 when it is not there)
    std::string hosts_file;            // --nats-hosts: extra addresses of multi-homed hosts
    std::size_t buffer_bytes = 64u << 20;
    bool wait_when_full = false;  // replay: wait for room while the bus is reachable
    std::string producer;         // the producer's identity in every message (see below)
    std::string label;            // starts every stderr line ("insert-dp replay: --nats URL")
};

// "PROGRAM.HOST.PID.START": one run of one producer, unique as long as a host's names are
// (the start time in ms tells a restarted process from the one before it). HOST: `host`, or
// this machine's hostname.
std::string default_producer_identity(std::string_view program, std::string_view host = {});

class NatsPublisher {
  public:
    using Clock = std::chrono::steady_clock;

    struct Counts {
        uint64_t records = 0;  // partition records taken into batches
        uint64_t batches = 0;  // batches sealed
        uint64_t acked = 0;    // batches the stream acknowledged (stored, or had already)
        uint64_t acked_records = 0;
        uint64_t republished = 0;  // batches published again after a failed acknowledgement
        uint64_t duplicates = 0;   // acknowledgements saying the stream had the batch already
        uint64_t dropped = 0;      // partition records dropped: no room, or undelivered at the end
        uint64_t connects = 0;     // connections made to the bus (1: never lost)
    };

    // Null with `error` (one line) when the configuration cannot work: no libnats, a hosts
    // file that does not load, a bad prefix.
    static std::unique_ptr<NatsPublisher> create(const NatsConfig& config, std::string& error);
    ~NatsPublisher();
    NatsPublisher(const NatsPublisher&) = delete;
    NatsPublisher& operator=(const NatsPublisher&) = delete;

    // The publisher's thread, on `cpus` when given (threads started after DPDK's EAL
    // inherit the main lcore's pinning); it connects in the background.
    void start(const std::vector<unsigned>& cpus = {});
    // Lines (whole ones; a line cut at the end is completed by the next call).
    void write(std::string_view bytes);
    // One whole line (ending in a newline) to partition `k`, not routed by its record (the
    // correlator's output stream, where a record's partition is its deciding instance's).
    void write_to(unsigned k, std::string_view line);
    // Seals every open batch now (more may be written after).
    void seal();
    // Whether everything written so far was acknowledged by the bus (or dropped).
    bool settled() const;
    // Seals the batches that waited long enough: call it now and then, even when nothing
    // is written (insert-dp's exporter after each periodic flush, insert-trace per poll).
    void pump();
    // The end: every batch sealed, and until `wait` is over for the bus to acknowledge them;
    // what is left is dropped, counted and said, with a last line of totals. True when
    // everything was acknowledged. Nothing may be written after it.
    bool finish(Clock::duration wait);

    Counts counts() const;
    const NatsConfig& config() const;

    struct Impl;

  private:
    explicit NatsPublisher(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace insert
