// The exporter's side of the records: fills what workers leave to it (per-endpoint latency
// percentiles, which need every message of the endpoint) and encodes JSON Lines
// (SPEC.md section 7). Runs on the exporter thread, never on a worker.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "dataplane/export/latency_book.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/records.hpp"

namespace insert::exporter {

// Totals for the `summary` record; the pipeline sums them over its workers.
struct SummaryCounts {
    uint64_t pkts = 0;  // every frame = roce + non_roce + sum(malformed)
    uint64_t roce_pkts = 0;
    uint64_t non_roce_pkts = 0;
    uint64_t malformed[proto::kMalformedReasons] = {};  // indexed by proto::Malformed
    uint64_t endpoints = 0;
    uint64_t connections = 0;
    uint64_t msgs = 0;
    double wall_s = 0;
    double mpps = 0;
};

// Appends one JSON object (no newline) for the record / summary.
void append_json(std::string& out, const state::Record& record);
void append_summary_json(std::string& out, const SummaryCounts& summary);

class RecordWriter {
  public:
    // `out` may be null: records are then only aggregated (for the terminal summary).
    explicit RecordWriter(std::FILE* out) : out_(out) {}
    ~RecordWriter() { flush(); }
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    // Updates the latency book from `msg` records and fills the latency fields of `qp`
    // records in place, then writes the JSON line.
    void write(state::Record& record);
    void write_summary(const SummaryCounts& summary);
    // False if a write to `out` failed (disk full, closed pipe).
    bool flush();

    uint64_t records() const { return records_; }
    const LatencyBook& latencies() const { return book_; }

  private:
    std::FILE* out_;
    std::string buffer_;
    LatencyBook book_;
    uint64_t records_ = 0;
    bool failed_ = false;
};

}  // namespace insert::exporter
