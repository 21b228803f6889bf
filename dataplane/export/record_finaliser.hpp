// What the records mean once every worker's are together, before any is encoded: the
// exporter fills what workers leave to it and joins what sharding split. Workers keep no
// latency histograms (kilobytes per endpoint on the hot path), so a `qp` record's
// percentiles come from the `msg` records of its endpoint seen before it; an endpoint seen
// by several workers (a UD QP or QP 1 receiving from several hosts is split by the ip-pair
// shard) gives one final record, merged here, and its idle evictions are joined where one
// engine would have kept it alive (SPEC invariant 1). RecordWriter encodes what comes out.
// Runs on the exporter thread, never on a worker.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>
#include <vector>

#include "dataplane/export/chunked_array.hpp"
#include "dataplane/export/endpoint_book.hpp"
#include "dataplane/export/latency_histogram.hpp"
#include "dataplane/state/records.hpp"

namespace insert::exporter {

// Sums two final `qp` records of one endpoint seen by different workers.
void merge_final_qp(state::QpRecord& into, const state::QpRecord& other);
// The latency fields of `q` from `h` (none: no acknowledged message).
void fill_latency(state::QpRecord& q, const LatencyHistogram* h);

class RecordFinaliser {
  public:
    using Emit = std::function<void(const state::Record&)>;

    // Replay with idle eviction: a split endpoint's parts are evicted by their workers on
    // their own. Its evicted records are then held until the end and joined where one
    // engine would have kept the endpoint alive: when no eviction tick (multiples of
    // `tick_ns`) came more than `timeout_ns` after one part's last packet and before the
    // next part's first.
    void hold_split_evictions(uint64_t timeout_ns, uint64_t tick_ns) {
        split_timeout_ns_ = timeout_ns;
        split_tick_ns_ = tick_ns;
    }
    // Live appliance: idle endpoints come and go for months, so nothing is kept per endpoint
    // once it is gone; the summary's `endpoints` then counts the endpoints alive at the end
    // and the lifetimes of those that went idle in between. Replay counts distinct
    // endpoints exactly.
    void set_bounded_memory(bool on) { bounded_memory_ = on; }

    // Takes a record as a worker left it: `msg` records feed their endpoint part's
    // latencies; `qp` records get theirs. True: the record goes out now. False: it is held
    // (an end-of-input final record, merged per endpoint; a split endpoint's eviction).
    bool take(state::Record& record);
    // Starts loading what take(record) will look up, in two stages a few records apart: the
    // endpoint book's slot (stage 0), then the entry it names (stage 1).
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

    // End of input, in this order. First the held evictions are joined: `emit` gets each
    // group that stays a record of its own (what joins a held final record merges into it).
    void join_held_evictions(const Emit& emit);
    // Then the held final records, in arrival order: final_record(i) fills record i's
    // latencies and returns it. Two threads may fill different records at once (they only
    // read the book); `scratch` is the caller's.
    uint32_t finals() const { return finals_.size(); }
    const state::Record& final_record(uint32_t i, LatencyHistogram& scratch);
    // Record i as final_record(i) left it.
    const state::Record& filled_final(uint32_t i) const { return finals_[i]; }
    // Then the summary's `endpoints` (distinct endpoints with a record, or in bounded
    // memory the live ones plus the lifetimes ended), and the finals are forgotten.
    uint64_t summary_endpoints() const;
    void clear_finals();

    const EndpointBook& endpoints() const { return book_; }

  private:
    // Latency fields of a record of the whole endpoint (its parts' latencies together).
    void fill_endpoint_latency(state::QpRecord& q) const;

    EndpointBook book_;
    // Held end-of-input final qp records, merged per endpoint, in arrival order, and the
    // book entry of each (its latencies, read when the record is filled).
    ChunkedArray<state::Record> finals_;
    std::vector<EndpointKey> final_keys_;
    std::unordered_set<EndpointKey, EndpointKeyHash> evicted_seen_;
    bool bounded_memory_ = false;
    uint64_t endpoints_gone_ = 0;  // bounded memory: endpoint lifetimes ended by eviction
    uint64_t split_timeout_ns_ = 0, split_tick_ns_ = 0;
    std::vector<state::Record> held_evictions_;  // split endpoints' evicted parts
};

}  // namespace insert::exporter
