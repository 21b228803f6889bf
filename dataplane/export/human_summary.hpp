// The terminal summary of a replay (or of a live run at shutdown): totals, top QPs by
// bytes, message latency percentiles, retransmission and congestion hot spots. Built on
// the exporter thread from the records as RecordWriter leaves them (qp latency fields
// filled), so it shows exactly what the JSON Lines say; memory is bounded (top-K lists
// and one histogram), whatever the number of endpoints.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dataplane/export/latency_histogram.hpp"
#include "dataplane/export/record_writer.hpp"
#include "dataplane/state/records.hpp"

namespace insert::exporter {

// How the work was spread, for the balance line; filled by the pipeline.
struct RunInfo {
    std::string mode = "replay";          // "replay" (of a file), "inline"/"monitor" (on ports)
    std::string input;                    // file name or port list
    std::string shard_policy;             // "ip-pair"
    std::vector<uint64_t> worker_frames;  // frames per worker
    std::vector<double> worker_busy_s;    // seconds of busy cycles per worker
    std::vector<double> worker_cpu_s;     // thread CPU seconds per worker
    uint64_t records_dropped = 0;         // sink refusals summed over the engines
    uint64_t table_full = 0;              // packets of endpoints that found no room
    uint64_t table_full_endpoints = 0;    // distinct endpoints that found no room
    uint64_t evicted = 0;                 // endpoints evicted idle
    uint64_t msgs_overflow = 0;           // messages frozen early (too many outstanding)
    uint64_t orphans_dropped = 0;         // held packets (before their First) dropped for room
    uint64_t events_unwindowed = 0;       // events written alone: no room for their window
};

class HumanSummary {
  public:
    static constexpr std::size_t kTop = 10;

    explicit HumanSummary(std::size_t top = kTop) : top_(top) {}

    // Every record, after RecordWriter::write() (final qp records carry latencies then).
    void observe(const state::Record& record);

    void render(std::FILE* out, const SummaryCounts& summary, const RunInfo& run) const;
    std::string render(const SummaryCounts& summary, const RunInfo& run) const;

    const LatencyHistogram& latencies() const { return latency_; }
    uint64_t final_qps() const { return final_qps_; }

  private:
    struct Ranked {
        uint64_t key = 0;
        state::QpRecord qp;
    };
    // Keeps the `top_` largest keys (ties: first seen wins); O(top) per candidate, and
    // only candidates above the current minimum get that far.
    void offer(std::vector<Ranked>& list, uint64_t key, const state::QpRecord& qp);

    std::size_t top_;
    LatencyHistogram latency_;  // every msg latency, all endpoints
    uint64_t msgs_by_op_[5] = {};
    uint64_t msgs_by_status_[7] = {};
    uint64_t events_by_kind_[8] = {};
    uint64_t final_qps_ = 0;
    uint64_t bytes_ = 0, dup_ = 0, ooo_ = 0, gaps_ = 0, missing_ = 0, naks_ = 0, rnr_ = 0,
             cnps_ = 0, ecn_ = 0;
    std::vector<Ranked> by_bytes_, by_retx_, by_congestion_;
};

}  // namespace insert::exporter
