// Records into the bus's messages (docs/scale-out.md "Messages"): JSON lines, routed to
// their partitions (record_route.hpp) and appended to each partition's open batch. A batch
// is sealed - numbered, and handed to the sink - when the next line would take it past
// `batch_bytes`, once its first line is `linger` old, or at the end; a line longer than
// `batch_bytes` travels alone. A record that goes to several partitions is a copy in each,
// and counts in each: the counts here are of such copies ("partition records").
//
// The bound is the sink's: before a copy joins a batch the sink is asked for room for it
// (the open batches' bytes and its own), and a copy it refuses is dropped and counted. One
// thread uses a batcher (insert-dp's exporter thread, insert-trace's reader).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/common/host_partition.hpp"

namespace insert {

struct RecordBatch {
    uint32_t partition = 0;
    uint64_t seq = 0;      // 1, 2, ... per partition: the order the batches were sealed in
    uint32_t records = 0;  // lines in `body`
    std::string body;      // whole JSON lines, each ending in a newline
};

class BatchSink {
  public:
    virtual ~BatchSink() = default;
    // Whether `bytes` more may be held, `open_bytes` being held in open batches already.
    virtual bool room(std::size_t bytes, std::size_t open_bytes) = 0;
    virtual void sealed(RecordBatch&& batch) = 0;
};

class RecordBatcher {
  public:
    using Clock = std::chrono::steady_clock;

    struct Counts {
        uint64_t records = 0;  // partition records batched
        uint64_t dropped = 0;  // partition records the sink had no room for
        uint64_t batches = 0;  // batches sealed
    };

    RecordBatcher(HostPartitions partitions, std::size_t batch_bytes, Clock::duration linger);

    // Bytes of lines (a line cut at the end is completed by the next call); seals what is
    // full or old.
    void write(std::string_view bytes, Clock::time_point now, BatchSink& sink);
    // One whole line (ending in a newline) to partition `partition`, whatever its record
    // says: the correlator's output (docs/scale-out.md "The output stream").
    void write_to(uint32_t partition, std::string_view line, Clock::time_point now,
                  BatchSink& sink) {
        append(partition, line, now, sink);
    }
    // Seals the batches whose first line is `linger` old.
    void seal_aged(Clock::time_point now, BatchSink& sink);
    // Seals every open batch (a line never ended is dropped and counted).
    void seal_all(BatchSink& sink, bool end = false);

    const HostPartitions& partitions() const { return partitions_; }
    std::size_t open_bytes() const { return open_bytes_; }
    Counts counts() const { return counts_; }

  private:
    struct Open {
        std::string body;
        uint32_t records = 0;
        uint64_t next_seq = 1;
        Clock::time_point since{};
    };
    void line(std::string_view line, Clock::time_point now, BatchSink& sink);
    void append(uint32_t partition, std::string_view line, Clock::time_point now, BatchSink& sink);
    void seal(uint32_t partition, BatchSink& sink);

    HostPartitions partitions_;
    std::size_t batch_bytes_;
    Clock::duration linger_;
    std::vector<Open> open_;
    std::size_t open_bytes_ = 0;
    std::string partial_;  // the start of a line whose end has not been written yet
    Counts counts_;
};

}  // namespace insert
