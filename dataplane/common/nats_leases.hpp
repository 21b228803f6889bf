// Which correlator instance owns which partition (insert-correlate --nats; docs/scale-out.md
// "Leases and takeover"): leases in a JetStream key-value bucket, PREFIX-leases, whose
// entries lapse `ttl` after they were last written (the bucket's TTL). Each instance
// - writes its member key `m.INSTANCE` every `interval`: the instances alive are the member
//   keys that have not lapsed;
// - holds the partition K it owns by the key `p.K` (its value the instance), made with
//   kvStore_Create - which fails while another instance's lease stands - and renewed every
//   `interval` with kvStore_Update on the revision it wrote last, which fails once another
//   instance made the key after it lapsed: then the partition is lost, at once;
// - takes free partitions among its candidates up to its share, the partitions divided by
//   the instances alive, rounded up; and gives back what it holds beyond its share once
//   the members stood still for two intervals (an instance that joins gets its share).
// An instance killed stops renewing: its leases lapse after `ttl` and the others take its
// partitions. One that stops cleanly deletes its leases at once (stop()).
//
// Taking a partition, the instance reads back the records the partition's previous owners
// published (PREFIX-out.part.K of the output stream, docs/scale-out.md "The output
// stream"), so that its join, rebuilt from the partition's first message, publishes none
// of them again: the event carries their lines' hashes.
//
// Its own thread and connection; the run takes the events from fd() as it polls.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace insert {

struct NatsLeaseConfig {
    std::vector<std::string> servers;  // nats://host:port, one or more (a cluster)
    std::string prefix = "insert";     // bucket PREFIX-leases; input stream PREFIX
    unsigned partitions = 8;
    std::vector<unsigned> candidates;  // the partitions this instance may own
    std::string instance;              // its identity (a key token: letters, digits, ._-)
    std::string label;                 // starts every stderr line
    std::chrono::milliseconds ttl{5000};
    std::chrono::milliseconds interval{1000};
};

struct LeaseEvent {
    enum class Kind {
        taken,      // the partition is this instance's: `published` its output so far
        lost,       // another instance has it now (this one failed to renew in time)
        give_back,  // beyond this instance's share: the run hands it back (given_back())
    };
    Kind kind = Kind::taken;
    unsigned partition = 0;
    // taken: fnv1a64 of every record line (without its newline) already on the output
    // stream's subject of the partition.
    std::vector<uint64_t> published;
};

// The output stream's name: PREFIX-out, subjects PREFIX-out.part.K.
std::string output_stream_name(const std::string& prefix);

class NatsLeases {
  public:
    struct Counts {
        uint64_t taken = 0, lost = 0, given_back = 0;
        unsigned members = 0;  // instances alive at the last look, this one included
    };

    // Null with `error` (one line) when there is no libnats or the configuration is bad.
    static std::unique_ptr<NatsLeases> create(const NatsLeaseConfig& config, std::string& error);
    ~NatsLeases();
    NatsLeases(const NatsLeases&) = delete;
    NatsLeases& operator=(const NatsLeases&) = delete;

    void start();
    // Readable while events wait (an eventfd).
    int fd() const;
    void take(std::vector<LeaseEvent>& out);
    // The run handed partition `k` back (after a give_back): its lease is deleted.
    void given_back(unsigned k);
    // From now on no partition is taken or given back (the run is stopping); the leases held
    // are renewed until stop().
    void hold_still();
    // The instances alive at the last look, this one excluded.
    unsigned others() const;
    // Stops. `release`: the leases held and the member key are deleted, so that the others
    // take the partitions at once (a hand-over); else they are left to lapse (the instance
    // decided everything it held: nobody is to rebuild a partition from half its input).
    void stop(bool release = true);
    Counts counts() const;

    struct Impl;

  private:
    explicit NatsLeases(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace insert
