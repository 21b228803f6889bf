// Ground truth: what a perfect observer at the observation point reports per SPEC.md
// sections 3-7 (as docs/semantics.md reads them). It is fed the simulator's packets in
// capture order together with the generator's own knowledge - which message each packet
// belongs to, where it sits in it, which connection it serves, what the CM exchange said -
// and applies the SPEC rules to that. It never parses frames and shares no code with
// dataplane/state, so comparing the dataplane with it is a comparison of two independent
// readings of one contract.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/gen/flat_map.hpp"
#include "bench/gen/scenario.hpp"
#include "bench/gen/simulator.hpp"

namespace insert::gen {

enum class TruthStatus : uint8_t { ok, nak_inv, nak_access, nak_op, nak_seq, nak_rnr, incomplete };
const char* status_name(TruthStatus s);

enum class PairRule : uint8_t { none, cm, sport, ip, psn };
const char* pair_rule_name(PairRule r);  // nullptr for none

// One SPEC 7 `msg` record.
struct TruthMsg {
    uint16_t src_host = 0, dst_host = 0;
    uint32_t dst_qpn = 0;
    std::optional<uint32_t> src_qpn;
    OpType op = OpType::write;
    std::optional<uint32_t> imm, inv;
    uint32_t psn_first = 0, psn_last = 0;
    uint32_t pkts = 0;
    uint64_t bytes = 0;
    std::optional<uint64_t> va;
    std::optional<uint32_t> rkey, dma_len;
    uint64_t t_first_ns = 0, t_last_ns = 0;
    std::optional<uint64_t> t_ack_ns;
    uint32_t retx_pkts = 0, naks = 0, rnr_naks = 0;
    TruthStatus status = TruthStatus::incomplete;
    uint32_t msg_uid = 0;  // generator's message (extra field, helps debugging)
};

// Takes each `msg` record as it is frozen, instead of the observer keeping it in msgs().
class TruthMsgSink {
  public:
    virtual ~TruthMsgSink() = default;
    virtual void on_msg(const TruthMsg& m) = 0;
};

struct NakCounters {
    uint64_t seq = 0, rnr = 0, inv = 0, access = 0, op = 0;
};

// semantics.md "Messages": outstanding messages per endpoint (the dataplane's cap).
constexpr std::size_t kMaxOpenMessages = 256;

// Messages to an endpoint not yet frozen, in creation order. Nearly always a few, so the
// first 13 live inline (one pointer chase less per packet than a std::vector on 100k QPs);
// an endpoint with more moves them all to the heap, room for kMaxOpenMessages, for good.
class OpenMessages {
  public:
    OpenMessages() = default;
    OpenMessages(const OpenMessages& o) : n_(o.n_) {
        if (o.heap_) {
            heap_ = std::make_unique<uint32_t[]>(kMaxOpenMessages);
            std::copy(o.heap_.get(), o.heap_.get() + n_, heap_.get());
        } else {
            ids_ = o.ids_;
        }
    }
    OpenMessages& operator=(const OpenMessages& o) {
        if (this != &o) *this = OpenMessages(o);
        return *this;
    }
    OpenMessages(OpenMessages&&) noexcept = default;
    OpenMessages& operator=(OpenMessages&&) noexcept = default;

    std::size_t size() const { return n_; }
    const uint32_t* begin() const { return data(); }
    const uint32_t* end() const { return data() + n_; }
    uint32_t front() const { return data()[0]; }
    void push_back(uint32_t uid) {  // the caller keeps n_ <= kMaxOpenMessages
        if (!heap_ && n_ == kInline) {
            heap_ = std::make_unique<uint32_t[]>(kMaxOpenMessages);
            std::copy(ids_.begin(), ids_.end(), heap_.get());
        }
        data()[n_++] = uid;
    }
    void erase(uint32_t uid) {
        uint32_t* ids = data();
        uint32_t* at = std::find(ids, ids + n_, uid);
        std::copy(at + 1, ids + n_, at);
        --n_;
    }

  private:
    static constexpr uint32_t kInline = 13;
    const uint32_t* data() const { return heap_ ? heap_.get() : ids_.data(); }
    uint32_t* data() { return heap_ ? heap_.get() : ids_.data(); }
    // One cache line, the heap pointer in it too: every request's push_back() reads it,
    // and placed after 14 inline ids it fell into the endpoint's third line, which the
    // truth thread does not prefetch for requests (~5% of all samples on `large`).
    uint32_t n_ = 0;
    std::array<uint32_t, kInline> ids_;
    std::unique_ptr<uint32_t[]> heap_;
};
static_assert(sizeof(OpenMessages) == 64);

// One endpoint's final SPEC 7 `qp` record (plus what the rules need while running).
// While packets are observed it is one *part* of an endpoint: what (host, qpn) receives
// from one source host (semantics.md "Sources"); finish() merges each endpoint's parts.
// Fields that most packets touch come first, so that with 100k endpoints a packet costs
// one or two cache misses here rather than one per field group.
struct alignas(64) TruthEndpoint {
    uint64_t pkts = 0, bytes = 0;
    uint64_t t_last_ns = 0;
    int32_t peer = -1;  // endpoint index
    uint32_t qpn = 0;
    uint16_t host = 0;
    // The part's source host, and its pairing candidacy (semantics.md: the first UDP
    // source port of its RC/UC/XRC packets).
    uint16_t src_host = 0, sport = 0;
    bool has_src = false;
    // Has received a response (ACK, ATOMIC ACK, READ response, NAK): it is a requester, so
    // sport/ip may pair it (semantics.md "Pairing").
    bool got_response = false;
    // Classification (SPEC 4).
    bool has_max = false;
    PairRule pair_by = PairRule::none;
    // The request at max_psn is a READ (a copy of its MsgInfo's op: that message was
    // posted long ago, and reading its line back was a cache miss per request packet).
    bool max_is_read = false;
    int transport = -1;  // proto::Transport of the first non-CNP packet
    uint32_t max_psn = 0;
    uint32_t max_uid = kNone;
    uint32_t held = 0;  // packets observed before their message's First/Only
    OpenMessages open;
    // Read by every freeze(): within the first three lines, which prefetch() loads for
    // the endpoint a response completes messages of (placed last, in the fifth line, it
    // was the truth thread's largest cache miss on `large`).
    struct NakSeen {
        uint32_t psn;
        bool rnr;
        uint8_t code;  // proto::NakCode for class 11
    };
    std::vector<NakSeen> nak_history;  // NAKs/RNR NAKs answering requests to this endpoint

    std::array<uint64_t, kOpTypes> msgs{};
    uint64_t dup_pkts = 0, ooo_pkts = 0, gaps = 0, missing = 0;
    NakCounters naks;
    uint64_t cnps = 0, ecn_ce = 0;
    uint64_t t_first_ns = 0;
    uint64_t t_transport_ns = 0;  // when the first non-CNP packet (`transport`) came
};

struct TruthSummary {
    uint64_t pkts = 0, roce_pkts = 0, non_roce_pkts = 0;
    std::array<uint64_t, 3> malformed{};  // length_mismatch, truncated, reserved_opcode
    uint64_t endpoints = 0, connections = 0, msgs = 0;
};

class TruthObserver : public ObservedSink {
  public:
    TruthObserver(const Scenario& scenario, const Simulator& sim);
    void observe(const SimPacket& p) override;
    // Hints for a packet about to be observed, in three stages a few packets apart (each
    // needs what the one before loaded): the connection's endpoint indexes and the
    // message; then the endpoints, PSN window word and message state; then, for a response,
    // the messages it may complete.
    void prefetch_early(const SimPacket& p) const;
    void prefetch(const SimPacket& p) override;
    void prefetch_late(const SimPacket& p) const;
    void prefetch_conn(uint32_t conn) override;
    // End of capture: freezes every open message (SPEC 5 "at the end").
    void finish();
    // Records go to `sink` from now on and msgs() stays empty (set before the first packet).
    void set_msg_sink(TruthMsgSink* sink) { msg_sink_ = sink; }

    const HugeVector<TruthMsg>& msgs() const { return out_; }
    const HugeVector<TruthEndpoint>& endpoints() const { return eps_; }
    const TruthSummary& summary() const { return summary_; }
    // Latencies of endpoint `e`'s completed messages (t_ack - t_first), in freeze order;
    // after finish().
    std::span<const uint64_t> latencies(std::size_t e) const {
        return {lat_values_.data() + lat_begin_[e], lat_begin_[e + 1] - lat_begin_[e]};
    }
    // Hints for latencies(e) soon, in two stages: where they are, then the values.
    void prefetch_latency_range(std::size_t e) const { __builtin_prefetch(&lat_begin_[e]); }
    void prefetch_latencies(std::size_t e) const {
        __builtin_prefetch(lat_values_.data() + lat_begin_[e]);
    }
    // Endpoint index of (host, qpn), or -1.
    int32_t find(uint16_t host, uint32_t qpn) const;
    // Most packets any endpoint held waiting for their First at one time. semantics.md caps
    // holding at 16 runs of consecutive PSNs per endpoint and the truth does not model the
    // cap: scenarios must stay below (the tshark test keeps built-ins within 8 packets).
    uint32_t max_held() const { return max_held_; }
    // Messages frozen early because kMaxOpenMessages (256) were open at their endpoint
    // (semantics.md cap).
    uint64_t msgs_overflow() const { return msgs_overflow_; }

  private:
    // All members zero at first: the table is a ZeroedArray.
    struct MsgState {
        uint8_t state = 0;  // 0 unseen, 1 packets seen but not its First, 2 open, 3 frozen
        bool seen_any = false;
        bool last_seen = false;
        bool last_resp_seen = false;
        bool next_req_set = false;
        // The requester's host, from its request packets: freeze() would otherwise read
        // the connection's ConnInfo, a cache miss per message on 100k QPs.
        uint16_t src_host = 0;
        uint32_t pkts = 0, retx = 0;
        uint32_t held = 0;
        uint64_t bytes = 0;
        uint32_t newest_off = 0;
        uint32_t resp_last_psn = 0, next_req_psn = 0;
        uint64_t t_first = 0, t_last = 0;
    };

    uint32_t endpoint(uint16_t host, uint32_t qpn, uint16_t src_host, uint64_t t);
    void merge_parts();
    void register_source(uint32_t e, const SimPacket& p);
    void try_pair(uint32_t e);
    void try_pair_by_psn(uint32_t a, uint32_t psn);
    bool psn_outstanding(const TruthEndpoint& f, uint32_t psn) const;
    bool can_be_peers(const TruthEndpoint& e, const TruthEndpoint& f) const;
    void make_pair(uint32_t e, uint32_t f, PairRule rule);
    void on_request(uint32_t b, const SimPacket& p);
    void on_response(uint32_t a, const SimPacket& p);
    void touch(MsgState& m, uint64_t t);
    uint32_t psn_last(uint32_t uid) const;
    void complete_acked(uint32_t b, uint32_t psn, uint64_t t, bool inclusive);
    void freeze(uint32_t b, uint32_t uid, TruthStatus status, std::optional<uint64_t> t_ack);
    struct HeldLast {
        uint32_t psn = 0;
        std::optional<uint32_t> imm, inv;
    };
    std::optional<HeldLast> absorb_held_after(uint32_t b, uint32_t uid);

    const Scenario& sc_;
    const Simulator& sim_;
    ZeroedArray<MsgState> ms_;
    HugeVector<TruthEndpoint> eps_;
    // While observing: part_key(host, qpn, source host) -> part; after finish():
    // host << 32 | qpn -> endpoint.
    FlatMap<uint32_t> ep_index_;
    HugeVector<uint32_t> conn_ep_;  // (connection, direction) -> endpoint: a lookup cache
    // The parts registered under one pairing key, as their number and the XOR of their
    // indexes: the sport and ip rules only ask "exactly one, and which?", and a part never
    // leaves the set, so no list needs keeping.
    struct Candidates {
        uint32_t count = 0;
        uint32_t xor_of = 0;
        void add(uint32_t e) { ++count, xor_of ^= e; }
        void remove(uint32_t e) { --count, xor_of ^= e; }
        int64_t only() const { return count == 1 ? int64_t{xor_of} : -1; }
    };
    // Pairing candidates: (X, Y, sport) and (X, Y) -> endpoints at X receiving from Y.
    FlatMap<Candidates> by_sport_;
    FlatMap<Candidates> by_ip_;
    // (X, Y) -> every part at X from Y that received RC/UC/XRC packets: the psn rule's
    // candidates, and its 64-candidate limit counts them.
    std::unordered_map<uint64_t, std::vector<uint32_t>> by_first_ip_;
    // CM: (sender host, receiver host, REQ Local Communication ID) -> Local QPN; learnt
    // pairs by part key.
    std::unordered_map<uint64_t, uint32_t> cm_req_;
    FlatMap<uint64_t> cm_partner_;
    HugeVector<TruthMsg> out_;
    TruthMsgSink* msg_sink_ = nullptr;
    // READ messages: which response PSNs were observed (few messages are READs).
    std::unordered_map<uint32_t, std::vector<bool>> resp_seen_;
    // Request PSN windows: 1024 bits per endpoint, by endpoint index.
    HugeVector<uint64_t> windows_;
    // (endpoint, latency) as messages complete; grouped per endpoint by finish().
    HugeVector<std::pair<uint32_t, uint64_t>> lat_log_;
    std::vector<std::size_t> lat_begin_;
    std::vector<uint64_t> lat_values_;
    TruthSummary summary_;
    std::vector<uint32_t> scratch_;  // messages to freeze, collected before freezing
    uint32_t max_held_ = 0;
    uint64_t msgs_overflow_ = 0;
};

}  // namespace insert::gen
