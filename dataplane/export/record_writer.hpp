// The exporter's encoder: JSON Lines (SPEC.md section 7) of the records as RecordFinaliser
// completes them (record_finaliser.hpp: latencies, merges, held evictions), written in
// blocks. Runs on the exporter thread, never on a worker.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "dataplane/export/event_merger.hpp"
#include "dataplane/export/record_finaliser.hpp"
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
    // Packets whose endpoint found no room in a worker's table, and the distinct endpoints
    // refused (docs/semantics.md "Table full").
    uint64_t table_full_pkts = 0;
    uint64_t table_full_endpoints = 0;
    // The run was cut short by this signal ("SIGINT"...); null when it ran to its end.
    const char* signal = nullptr;
    // --records unix:PATH (docs/live.md): connections made to the collector and records
    // dropped while it was away or behind (`"unix": {...}`; absent for other outputs).
    bool unix_socket = false;
    uint64_t unix_connects = 0;
    uint64_t unix_dropped = 0;
};

// Room one JSON object may need: a qp record with two IPv6 addresses and every number at
// 20 digits is under 1 KB; the summary's reals are cut at 40 characters.
constexpr std::size_t kMaxJsonObject = 2048;

// Writes one JSON object (no newline) for the record / summary at `p`, which must have
// kMaxJsonObject bytes of room; returns the end of what was written.
char* write_json(char* p, const state::Record& record);
char* write_summary_json(char* p, const SummaryCounts& summary);
// The same, appended to a string.
void append_json(std::string& out, const state::Record& record);
void append_summary_json(std::string& out, const SummaryCounts& summary);

class RecordWriter {
  public:
    using Observer = std::function<void(const state::Record&)>;

    // `out` may be null: records are then only aggregated (for the terminal summary).
    explicit RecordWriter(std::FILE* out) : out_(out) {}
    // Where JSON lines go from now on (before the first record: outputs are opened once the
    // run has started, so that a failed start leaves an existing file as it was).
    void set_output(std::FILE* out) { out_ = out; }
    ~RecordWriter() { flush(); }
    RecordWriter(const RecordWriter&) = delete;
    RecordWriter& operator=(const RecordWriter&) = delete;

    // Called with every record exactly as written (merged, latencies filled).
    void set_observer(Observer observer) { observer_ = std::move(observer); }

    // Record semantics (latencies, merges, held evictions): RecordFinaliser's.
    void hold_split_evictions(uint64_t timeout_ns, uint64_t tick_ns) {
        finaliser_.hold_split_evictions(timeout_ns, tick_ns);
    }
    void set_bounded_memory(bool on) { finaliser_.set_bounded_memory(on); }
    // The number of workers whose records come in: their event windows of one endpoint,
    // kind and second are merged into one record (EventMerger).
    void set_event_sources(unsigned workers) { events_.set_sources(workers); }

    // Writes the JSON line of every record the finaliser lets out now (with its latency
    // fields); end-of-input final `qp` records are held until write_summary(). `worker`:
    // the worker the record comes from (event windows and marks).
    void write(state::Record& record, unsigned worker = 0) {
        if (record.type == state::RecordType::mark ||
            (record.type == state::RecordType::event && state::windowed(record.event.kind))) {
            events_.take(record, worker, emit_);
            return;
        }
        if (finaliser_.take(record)) emit(record);
    }
    [[gnu::always_inline]] void prefetch(const state::Record& record, int stage) const {
        finaliser_.prefetch(record, stage);
    }
    // Writes the event windows still held, the held final `qp` records, then the summary,
    // whose `endpoints` becomes the number of distinct endpoints with a final record.
    void write_summary(SummaryCounts summary);
    // False if a write to `out` failed (disk full, closed pipe).
    bool flush();
    // A write failed already (read by the exporter thread, which owns the writer).
    bool failed() const { return failed_; }

    uint64_t records() const { return records_; }
    const EndpointBook& endpoints() const { return finaliser_.endpoints(); }

  private:
    void emit(const state::Record& record);

    std::FILE* out_;
    Observer observer_;
    RecordFinaliser finaliser_;
    EventMerger events_;
    const EventMerger::Emit emit_ = [this](const state::Record& r) { emit(r); };
    // JSON lines waiting for one fwrite: records are written straight into it (room for
    // one more object is always left), flushed once kFlushBytes are used.
    static constexpr std::size_t kFlushBytes = 1 << 16;
    std::unique_ptr<char[]> buffer_{new char[kFlushBytes + kMaxJsonObject + 1]};
    std::size_t used_ = 0;
    uint64_t records_ = 0;
    bool failed_ = false;
};

}  // namespace insert::exporter
