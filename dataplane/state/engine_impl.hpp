// The Engine implementation: tables, pairing, classification and message assembly.
// Split over engine.cpp (packet path), engine_messages.cpp (message assembly and
// completion), engine_pairing.cpp (pairing rules) and engine_records.cpp (records,
// reports, eviction, end of input).
#pragma once

#include <array>
#include <memory>

#include "dataplane/common/counter.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/endpoint.hpp"
#include "dataplane/state/endpoint_key.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/state/fixed_hash_map.hpp"
#include "dataplane/state/lazy_array.hpp"
#include "dataplane/state/message.hpp"

namespace insert::state {

using common::bump;  // the engine's lcore is its counters' single writer

// The index's value: the endpoint, and a hint of its peer that lets the prefetch stages
// fetch the peer's lines together with the endpoint's (never trusted beyond that:
// Endpoint::peer_index and its incarnation are the truth).
struct IndexEntry {
    uint32_t endpoint = kNoIndex;
    uint32_t peer_hint = kNoIndex;
};

struct PairCount {
    uint32_t count = 0;
    uint32_t rep = kNoIndex;   // the endpoint, when count == 1
    uint32_t head = kNoIndex;  // all of them, linked through Endpoint::next_same_source
};

// A CM REQ by its sender, the host it went to and its Local Communication ID: the REP that
// answers it comes back from that host (so that CM exchanges of other host pairs, which
// may reuse the ID, cannot meet: pairing stays within a host pair, as sharding does).
struct CmRequestKey {
    proto::IpAddress sender;
    proto::IpAddress receiver;
    uint32_t comm_id = 0;
    friend bool operator==(const CmRequestKey&, const CmRequestKey&) = default;
};
struct CmRequestKeyHash {
    std::size_t operator()(const CmRequestKey& k) const noexcept {
        return hash_ip(k.sender, hash_ip(k.receiver, k.comm_id));
    }
};

// An endpoint's open event window of one kind (EngineImpl::event_index_).
struct EventKey {
    EndpointKey endpoint;
    EventKind kind = EventKind::gap;
    friend bool operator==(const EventKey&, const EventKey&) = default;
};
struct EventKeyHash {
    std::size_t operator()(const EventKey& k) const noexcept {
        return hash_ip(k.endpoint.ip,
                       k.endpoint.qpn ^ uint64_t{static_cast<uint8_t>(k.kind)} << 32);
    }
};

// Counters of pairing-input changes, one per slot of host pairs (EngineImpl::pair_slots_).
constexpr uint32_t kPairSlots = 4096;

// tick()'s deadline wheel (engine_records.cpp): buckets of idle_timeout/8 of capture time,
// 32 of them (four timeouts: a deadline is rarely more than one timeout ahead of the
// wheel, and one further ahead waits in its bucket for its round). Per slot: its links and
// absolute bucket, and room in the array of candidates a tick sorts.
constexpr uint32_t kWheelBuckets = 32;
constexpr uint32_t kWheelSubdivisions = 8;  // buckets per idle timeout
constexpr std::size_t kWheelBytesPerEndpoint = 3 * sizeof(uint32_t) + sizeof(uint64_t);

class EngineImpl final : public Engine {
  public:
    EngineImpl(const EngineConfig& config, RecordSink& sink);
    bool valid() const;

    void process_burst(const proto::ParsedPacket* pkts, const uint64_t* ts_ns,
                       unsigned n) noexcept override;
    void tick(uint64_t now_ns) noexcept override;
    void close_windows(uint64_t now_ns) noexcept override;
    void report(uint64_t now_ns) override;
    bool advance_report() noexcept override;
    void finish(uint64_t end_ns) override;
    const EngineCounters& counters() const override { return counters_; }
    std::size_t bytes_per_endpoint() const override;

  private:
    // engine_prefetch.cpp: the staged prefetch of process_burst.
    static constexpr unsigned kGroup = 32;  // packets staged together (a worker's burst)
    struct Lookahead {
        uint64_t hash[kGroup];       // of the packet's endpoint key
        uint32_t index[kGroup];      // endpoint found by the lookup stage, kNoIndex if none
        uint32_t peer_hint[kGroup];  // response: the peer whose lines that stage fetched
        uint32_t opening = 0;        // message-opening packets of the group staged so far
    };
    void stage_index(const proto::ParsedPacket& pkt, unsigned k) noexcept;
    void stage_endpoint(const proto::ParsedPacket& pkt, unsigned k) noexcept;
    void stage_messages(const proto::ParsedPacket& pkt, unsigned k) noexcept;
    void prefetch_pairing(const proto::ParsedPacket& pkt) noexcept;

    // engine.cpp
    void process_one(const proto::ParsedPacket& pkt, uint64_t ts, unsigned k) noexcept;
    // The part of `key` receiving from `src`, created if absent; kNoIndex when the table is
    // full. create_endpoint() is the path of a packet whose endpoint the lookahead did not
    // find (it makes the index's part); part_from() finds or makes another source's part
    // next to the index's part `primary`.
    uint32_t create_endpoint(const EndpointKey& key, uint64_t hash, const proto::IpAddress& src,
                             uint64_t ts) noexcept;
    uint32_t part_from(uint32_t primary, const proto::IpAddress& src, uint64_t ts) noexcept;
    // The part of `key` receiving from `src`, or kNoIndex (no creation).
    uint32_t find_part(const EndpointKey& key, const proto::IpAddress& src) noexcept;
    uint32_t take_slot(const EndpointKey& key, const proto::IpAddress& src, uint64_t ts) noexcept;
    // Gives back a slot just taken whose table entry could not be made.
    void drop_new_slot(uint32_t idx) noexcept;
    void count_refused(uint64_t hash) noexcept;
    void handle_request(uint32_t idx, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    // The next PSN of the newest message, in order: attributed at once (true), or false.
    bool continue_tail(Endpoint& ep, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    void handle_response(uint32_t idx, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    void handle_cm(const proto::ParsedPacket& pkt) noexcept;
    Endpoint* peer_of(Endpoint& ep) noexcept;

    // engine_messages.cpp
    uint32_t owner_of(Endpoint& ep, uint32_t psn, bool reads_only) noexcept;
    // A message opened by `pkt` (its First/Only, READ request or atomic), or kNoIndex.
    uint32_t create_message(Endpoint& ep, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    void absorb_orphans(Endpoint& ep, uint32_t m, bool at_freeze = false) noexcept;
    bool absorb_pending_naks(Endpoint& ep, uint32_t m) noexcept;  // true: frozen by a fatal NAK
    bool add_orphan(Endpoint& ep, const proto::ParsedPacket& pkt, MsgOp op, uint64_t ts,
                    bool past_hole = false) noexcept;
    void join_orphan(OpenMessage& m, OrphanRun& o) noexcept;
    bool extend_run(OrphanBlock& block, OrphanRun one) noexcept;
    bool held_last_before(const Endpoint& ep, const OpenMessage& m, uint32_t psn) const noexcept;
    bool count_orphan_dup(Endpoint& ep, uint32_t psn, uint64_t ts) noexcept;
    void release_orphans_if_empty(Endpoint& ep) noexcept;
    void attribute_packet(OpenMessage& m, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    void note_next_request(Endpoint& ep, uint32_t psn) noexcept;
    // A message whose First is `next_first` follows `m`: m's range ends before it.
    static void bound_by_next_first(OpenMessage& m, uint32_t next_first) noexcept;
    void apply_request_data(Endpoint& ep, const proto::ParsedPacket& pkt, bool dup,
                            uint64_t ts) noexcept;
    void apply_read_response(Endpoint& f, const proto::ParsedPacket& pkt, uint64_t ts) noexcept;
    void complete_acked(Endpoint& f, uint32_t psn, bool nak, uint64_t ts) noexcept;
    void apply_nak(Endpoint& f, uint32_t psn, uint8_t syndrome, uint64_t ts) noexcept;
    // A UC/UD message whose every packet came is complete (no ACK will come).
    [[gnu::always_inline]] inline void maybe_complete_unreliable(Endpoint& ep, uint32_t m) noexcept;
    bool within(const OpenMessage& m, uint32_t psn) const noexcept;
    bool past_hole(const Endpoint& ep, OpenMessage& m, uint32_t psn) const noexcept;

    // engine_pairing.cpp
    void note_source(uint32_t idx, const proto::ParsedPacket& pkt) noexcept;
    void try_pair(uint32_t idx, uint64_t ts) noexcept;
    bool try_pair_by_psn(uint32_t idx, uint32_t psn, uint64_t ts) noexcept;
    bool psn_outstanding(const Endpoint& f, uint32_t psn) const noexcept;
    bool eligible(const Endpoint& f, const proto::IpAddress& from) const noexcept;
    bool can_be_peers(const Endpoint& e, const Endpoint& f) const noexcept;
    void make_pair(uint32_t e, uint32_t f, PairBy by, uint64_t ts) noexcept;
    void forget_source(Endpoint& ep) noexcept;
    // An input of the sport/ip rules changed for `ep`'s host pair (its source, flags,
    // pairing or liveness): the unpaired endpoints of that pair try again.
    void pairing_changed(const Endpoint& ep) noexcept;
    // What an endpoint's last pairing attempt saw: it tries again once this differs.
    uint64_t pairing_version(const Endpoint& ep) const noexcept;

    // engine_records.cpp
    void freeze(Endpoint& ep, uint32_t m, MsgStatus status, bool acked, uint64_t t_ack) noexcept;
    void freeze_open(Endpoint& ep, bool timeout, uint64_t now) noexcept;
    void fill_qp(const Endpoint& ep, bool final, bool evicted, QpRecord& q) noexcept;
    void emit_qp(const Endpoint& ep, bool final, bool evicted = false) noexcept;
    // One `qp` record for an endpoint: its index part `primary` and every part chained to
    // it, merged (state/qp_merge.hpp).
    void emit_endpoint_qp(uint32_t primary, bool final) noexcept;
    void unlink_part(uint32_t idx) noexcept;
    // The periodic report (engine_records.cpp): called with report_pending_ before anything
    // changes part `idx`, it reports the part's endpoint first if the report has not yet.
    void report_before_change(uint32_t idx) noexcept;
    // Reports the endpoint whose index part is `primary` as it was at report_now_.
    void report_endpoint(uint32_t primary) noexcept;
    // Sweeps up to `slots` slots from the report's cursor (all with UINT32_MAX).
    void sweep_report(uint32_t slots) noexcept;
    void push(const Record& r) noexcept;
    void evict(uint32_t idx) noexcept;
    // The deadline wheel of tick(). A live part's deadline is the first capture time at
    // which tick() must act on it: when it will have been idle longer than the timeout.
    // Each live part is filed in the bucket of a deadline never later than its own.
    uint64_t deadline_of(const Endpoint& ep) const noexcept;
    uint64_t bucket_of(uint64_t deadline) const noexcept;
    void wheel_file(uint32_t idx, uint64_t bucket) noexcept;
    void wheel_unlink(uint32_t idx) noexcept;
    // Files `idx` at `bucket` if that is earlier than where it is.
    void wheel_earlier(uint32_t idx, uint64_t bucket) noexcept;
    // A packet older than the part's last one moved its idle deadline back.
    void traffic_went_back(uint32_t idx, uint64_t ts) noexcept;

    // engine_events.cpp: event windows per destination endpoint and kind (docs/semantics.md
    // "Events"). An event of part `ep` at `ts` (its window: ts's second). Never inlined, and
    // cold: inlined into the packet path by the link-time optimizer, the window table's
    // code cost every packet ~7 instructions more (scripts/count-instructions.sh), events
    // or not.
    [[gnu::noinline, gnu::cold]] void count_event(EventKind kind, const Endpoint& ep, uint32_t psn,
                                                  uint64_t ts, uint64_t missing = 0,
                                                  uint8_t syndrome = 0) noexcept;
    // The same, in `window`: a `timeout` falls in the window of the moment its part had
    // been idle longer than the timeout, which every worker count agrees on.
    void count_event_in(uint32_t window, EventKind kind, const Endpoint& ep, uint32_t psn,
                        uint64_t ts, uint64_t missing, uint8_t syndrome) noexcept;
    // Pushes every open window before closed_events_ (closed_timeouts_ for timeouts), then
    // a WindowMark saying so.
    void flush_windows() noexcept;

    EngineConfig config_;
    RecordSink& sink_;
    EngineCounters counters_;
    uint32_t capacity_;
    LazyArray<Endpoint> endpoints_;  // [0, high_water_) constructed
    LazyArray<uint32_t> free_endpoints_;
    uint32_t free_count_ = 0;
    uint32_t high_water_ = 0;  // endpoints_[0, high_water_) have been used
    // Pairing attempts are repeated only when their inputs may have changed (docs/state.md
    // "Pairing attempts"): a change bumps the counter of its host pair's slot, or with CM
    // pairs known (their endpoints need not share host pairs) the global one.
    uint64_t pair_generation_ = 0;
    std::array<uint64_t, kPairSlots> pair_slots_{};
    uint32_t incarnations_ = 0;  // endpoints created so far (Endpoint::incarnation)
    Lookahead ahead_;
    // Each endpoint's first part, by (ip, qpn): the one the packet path looks up. Parts from
    // other sources are in parts_, chained to it (Endpoint::next_part).
    FixedHashMap<EndpointKey, IndexEntry, EndpointKeyHash> index_;
    FixedHashMap<PartKey, uint32_t, PartKeyHash> parts_;
    FixedHashMap<HostPairKey, PairCount, HostPairKeyHash> hosts_;
    FixedHashMap<CmRequestKey, uint32_t, CmRequestKeyHash> cm_requests_;
    FixedHashMap<PartKey, PartKey, PartKeyHash> cm_pairs_;
    MessagePool messages_;
    SlotPool<OrphanBlock> orphan_blocks_;
    // Endpoints that found no room, as bits of a hash (linear counting): how many distinct
    // endpoints the table refused, in bounded memory (EngineCounters::table_full_bits).
    LazyArray<uint64_t> refused_bits_;
    // tick()'s deadline wheel (kept out of Endpoint, whose lines the packet path reads):
    // per slot its neighbours in its bucket's list and its absolute bucket (deadline /
    // granularity, rounded up); buckets before wheel_cursor_ are empty.
    bool wheel_on_;  // idle_timeout_ns != 0
    uint64_t wheel_granularity_;
    uint64_t wheel_cursor_ = 0;
    std::array<uint32_t, kWheelBuckets> wheel_heads_;
    LazyArray<uint32_t> wheel_prev_;
    LazyArray<uint32_t> wheel_next_;
    LazyArray<uint64_t> wheel_bucket_;
    LazyArray<uint32_t> tick_candidates_;
    // The periodic report in progress (report()): its capture time, the slot its sweep has
    // reached, and the parity of Endpoint::report_parity that marks a part as reported.
    // Parts created while it is in progress are marked at once (they were not live then).
    bool report_pending_ = false;
    bool report_parity_ = false;
    uint32_t report_cursor_ = 0;
    uint64_t report_now_ = 0;
    // Open event windows (after the members every packet reads): by (endpoint, kind), their
    // records, and the list of them that flush_windows() walks. Windows before closed_events_
    // (seconds since the epoch; before closed_timeouts_ for timeouts) have been pushed.
    FixedHashMap<EventKey, uint32_t, EventKeyHash> event_index_;
    SlotPool<EventRecord> event_windows_;
    LazyArray<uint32_t> open_windows_;
    uint32_t open_count_ = 0;
    uint32_t closed_events_ = 0;
    uint32_t closed_timeouts_ = 0;
};

// Inline: continue_tail() runs it on every Middle/Last of a message, and as a call from
// another unit (which GCC would not inline, even with LTO) it cost ~4 instructions a frame
// for a test that is false on RC traffic (scripts/count-instructions.sh).
inline void EngineImpl::maybe_complete_unreliable(Endpoint& ep, uint32_t mi) noexcept {
    const OpenMessage& m = messages_[mi];
    if (m.unreliable && m.last_known && m.pkts == proto::psn_sub(m.psn_last, m.psn_first) + 1)
        freeze(ep, mi, MsgStatus::ok, false, 0);
}

}  // namespace insert::state
