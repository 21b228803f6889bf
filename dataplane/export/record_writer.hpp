// The exporter's side of the records: fills what workers leave to it (per-endpoint latency
// percentiles, which need every message of the endpoint) and encodes JSON Lines
// (SPEC.md section 7). Runs on the exporter thread, never on a worker.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "dataplane/export/chunked_array.hpp"
#include "dataplane/export/endpoint_book.hpp"
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

// Sums two final `qp` records of one endpoint seen by different workers (an endpoint that
// receives from several hosts - a UD QP, QP 1 - is split by connection-affine sharding).
void merge_final_qp(state::QpRecord& into, const state::QpRecord& other);

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

    // Replay with idle eviction: an endpoint that receives from several hosts (a UD QP, the
    // CM's QP 1) is split over workers by the ip-pair shard, and each worker evicts its part
    // on its own. Its evicted records are then held until write_summary() and joined where
    // one engine would have kept the endpoint alive: when no eviction tick (multiples of
    // `tick_ns`) came more than `timeout_ns` after one part's last packet and before the
    // next part's first. Records are then the same for any worker count.
    void hold_split_evictions(uint64_t timeout_ns, uint64_t tick_ns) {
        split_timeout_ns_ = timeout_ns;
        split_tick_ns_ = tick_ns;
    }

    // Live appliance: idle endpoints come and go for months, so the writer keeps nothing
    // per endpoint it has seen go: the summary's `endpoints` then counts the endpoints alive
    // at the end and the lifetimes of those that went idle in between (an endpoint that
    // comes back counts again). Replay counts distinct endpoints exactly.
    void set_bounded_memory(bool on) { bounded_memory_ = on; }

    // Updates the latency book from `msg` records and fills the latency fields of `qp`
    // records, then writes the JSON line. End-of-input final `qp` records are held and
    // merged per endpoint until write_summary(), so an endpoint seen by several workers
    // gives one final record (SPEC invariant 1); evicted endpoints' are written at once.
    void write(state::Record& record);
    // Starts loading what write(record) will look up, in two stages a few records apart:
    // the endpoint book's slot (stage 0), then the entry it names (stage 1).
    [[gnu::always_inline]] void prefetch(const state::Record& record, int stage) const {
        EndpointKey key;
        if (record.type == state::RecordType::msg && record.msg.has_ack)
            key = {record.msg.dst_ip, record.msg.dst_qpn};
        else if (record.type == state::RecordType::qp)
            key = {record.qp.ip, record.qp.qpn};
        else
            return;
        if (stage == 0)
            book_.prefetch(key);
        else
            book_.prefetch_entry(key);
    }
    // Writes the held final `qp` records, then the summary, whose `endpoints` becomes the
    // number of distinct endpoints with a final record.
    void write_summary(SummaryCounts summary);
    // False if a write to `out` failed (disk full, closed pipe).
    bool flush();
    // A write failed already (read by the exporter thread, which owns the writer).
    bool failed() const { return failed_; }

    uint64_t records() const { return records_; }
    const EndpointBook& endpoints() const { return book_; }

  private:
    // Latency fields of a record of the whole endpoint (its parts' latencies together).
    void fill_latency(state::QpRecord& q) const;
    void emit(const state::Record& record);
    void join_held_evictions();

    std::FILE* out_;
    Observer observer_;
    // Held end-of-input final qp records, merged per endpoint, in arrival order, and the
    // book entry of each (its latencies, read when the record is written).
    ChunkedArray<state::Record> finals_;
    std::vector<EndpointKey> final_keys_;
    std::unordered_set<EndpointKey, EndpointKeyHash> evicted_seen_;
    bool bounded_memory_ = false;
    uint64_t endpoints_gone_ = 0;  // bounded memory: endpoint lifetimes ended by eviction
    uint64_t split_timeout_ns_ = 0, split_tick_ns_ = 0;
    std::vector<state::Record> held_evictions_;  // UD endpoints' evicted parts
    // JSON lines waiting for one fwrite: records are written straight into it (room for
    // one more object is always left), flushed once kFlushBytes are used.
    static constexpr std::size_t kFlushBytes = 1 << 16;
    std::unique_ptr<char[]> buffer_{new char[kFlushBytes + kMaxJsonObject + 1]};
    std::size_t used_ = 0;
    EndpointBook book_;
    uint64_t records_ = 0;
    bool failed_ = false;
};

}  // namespace insert::exporter
