// A live run's inputs from the bus (insert-correlate --nats; docs/scale-out.md "The
// consumers"): the partitions this instance owns, each read through its durable JetStream
// consumer (dataplane/common/nats_consumer.hpp), taken and dropped as the instance's leases
// come and go (partition_join.hpp). A message is one batch of one producer's records for one
// partition; it is checked - the deployment's partition count and its partition, its
// headers, a whole body - and a message that fails is refused or skipped, counted and said,
// never holding up its partition. Its lines are decoded as a socket's lines are
// (parse_block) and handed to the partition's join as the input of their (partition,
// producer): the records of one producer on one partition are one stream for the watermark,
// as a --listen connection is. Then the message is acknowledged (a message delivered again
// in this run, after its acknowledgement was lost, is recognised by its stream sequence and
// skipped: seq_ranges.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/live/live_correlator.hpp"
#include "correlator/run/run_metrics.hpp"
#include "correlator/run/run_options.hpp"
#include "correlator/run/seq_ranges.hpp"
#include "dataplane/common/nats_consumer.hpp"

namespace insert::correlate {

class BusInputs {
  public:
    // `engine_of`: the join of a partition held now, or null. `counts` gathers what the
    // lines held (the run's summary.inputs).
    BusInputs(const BusOptions& options, std::function<LiveCorrelator*(unsigned)> engine_of,
              HostNames& names, IngestCounts& counts);
    ~BusInputs();

    // Connects in the background and starts consuming; false with `error` when the
    // configuration cannot work.
    bool open(std::string& error);
    // Readable while messages wait.
    int fd() const;
    // Decodes and hands on the messages that wait, and acknowledges them.
    void read();
    // Partition `k` is held now: read from its first message. Dropped: not read any more.
    void take_partition(unsigned k);
    void drop_partition(unsigned k);
    // Stops consuming (what was fetched and not read is delivered again to the next run)
    // and says what was read.
    void finish();
    // Streams whose batches waited for a missing one past kGapWait go on without it.
    void check_gaps();
    // Messages joined, refused, malformed, delivered again (/metrics).
    void counts(BusState& out) const {
        out.messages = messages_;
        out.refused = refused_;
        out.malformed = malformed_;
        out.again = again_;
    }
    // The streams as /metrics shows them, up to `room` more.
    void producers(std::vector<ProducerState>& out, std::size_t room) const;

  private:
    struct Stream {
        unsigned partition = 0;
        std::string producer;
        IngestCounts counts;
        uint64_t next_seq = 1;                 // the producer's next batch (Insert-Seq)
        std::map<uint64_t, BusMessage> ahead;  // batches that came before it, by Insert-Seq
        std::set<uint64_t> skipped;            // gone on without: joined late if they come
        std::chrono::steady_clock::time_point waiting_since{};
    };
    // Checked, then joined in its producer's order: a batch ahead of the next one expected
    // (Insert-Seq) is held until the ones before it came - a batch published again after a
    // failed acknowledgement is stored after those that followed it - or until
    // kGapWait passed, when the partition goes on without them (and joins them late if
    // they come after all).
    void handle(BusMessage& m);
    void join(const BusMessage& m, uint32_t input, LiveCorrelator& engine);
    // Joins what waited behind the batches now there (`give_up`: behind a gap, too).
    void drain(uint32_t input, bool give_up);
    // The checks of docs/scale-out.md "The consumers": empty when the message is good, else
    // why not; `refused` tells a configuration mismatch from a malformed message.
    std::string check(const BusMessage& m, bool& refused) const;
    void refuse(const BusMessage& m, const std::string& why);
    void skip_malformed(const BusMessage& m, const std::string& why);
    uint32_t stream_of(unsigned partition, std::string_view producer);
    // The message's lines into buffer_ (padded for the parser); returns the bytes.
    std::size_t copy_body(std::string_view body);
    std::string where(const BusMessage& m) const;

    const BusOptions& options_;
    std::string label_;
    std::function<LiveCorrelator*(unsigned)> engine_of_;
    LineParser parser_;
    IngestCounts& counts_;
    std::unique_ptr<NatsConsumer> consumer_;
    std::vector<Stream> streams_;  // by the engine's input number
    std::map<std::pair<unsigned, std::string>, uint32_t, std::less<>> stream_index_;
    std::vector<SeqRanges> handled_;  // per partition: the stream sequences handled
    std::unique_ptr<char[]> buffer_;
    std::size_t capacity_ = 0;
    std::set<std::pair<std::string, std::string>> said_refused_;  // (producer, what)
    uint64_t messages_ = 0, records_ = 0, refused_ = 0, malformed_ = 0, again_ = 0;
    uint64_t reordered_ = 0, gaps_ = 0;  // batches held for their turn; gaps given up on
    std::size_t bad_reported_ = 0;
    bool finished_ = false;
};

}  // namespace insert::correlate
