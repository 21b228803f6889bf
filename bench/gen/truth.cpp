#include "bench/gen/truth.hpp"

#include <algorithm>
#include <tuple>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::gen {

namespace {

using proto::psn_add;
using proto::psn_newer;
using proto::psn_not_older;
using proto::psn_sub;

// SPEC 4: the window of request PSNs an endpoint remembers.
constexpr uint32_t kWindow = 1024;
constexpr uint32_t kWindowWords = kWindow / 64;
// semantics.md `psn`: candidates examined per response; more and the rule does not decide.
constexpr std::size_t kMaxPsnCandidates = 64;
// semantics.md `psn`: a READ whose Last/Only response is unknown is assumed to span one
// response PSN per 256 B of its DMA length (the smallest path MTU).
constexpr uint32_t kSmallestMtu = 256;

uint64_t ep_key(uint16_t host, uint32_t qpn) {
    return (uint64_t{host} << 32) | qpn;
}
// semantics.md "Sources": the part of endpoint (host, qpn) that receives from `src`.
uint64_t part_key(uint16_t host, uint32_t qpn, uint16_t src) {
    return (uint64_t{host} << 40) | (uint64_t{src} << 24) | (qpn & 0xFFFFFF);
}
uint64_t cm_req_key(uint16_t sender, uint16_t receiver, uint32_t comm_id) {
    return (uint64_t{sender} << 48) | (uint64_t{receiver} << 32) | comm_id;
}
uint64_t sport_key(uint16_t x, uint16_t y, uint16_t s) {
    return (uint64_t{x} << 32) | (uint64_t{y} << 16) | s;
}
uint64_t ip_key(uint16_t x, uint16_t y) {
    return (uint64_t{x} << 16) | y;
}

bool is_send_write(OpType o) {
    return o == OpType::send || o == OpType::write;
}
bool is_atomic(OpType o) {
    return o == OpType::cmp_swap || o == OpType::fetch_add;
}

bool in_range(uint32_t psn, uint32_t first, uint32_t last) {
    return psn_not_older(psn, first) && psn_not_older(last, psn);
}

}  // namespace

const char* status_name(TruthStatus s) {
    static constexpr const char* kNames[] = {"ok",      "nak_inv", "nak_access", "nak_op",
                                             "nak_seq", "nak_rnr", "incomplete"};
    return kNames[static_cast<int>(s)];
}

const char* pair_rule_name(PairRule r) {
    switch (r) {
        case PairRule::cm:
            return "cm";
        case PairRule::sport:
            return "sport";
        case PairRule::ip:
            return "ip";
        case PairRule::psn:
            return "psn";
        case PairRule::none:
            break;
    }
    return nullptr;
}

TruthObserver::TruthObserver(const Scenario& scenario, const Simulator& sim)
    : sc_(scenario),
      sim_(sim),
      ms_(sim.messages().size()),
      conn_ep_(sim.conns().size() * 2, kNone) {
    out_.reserve(sim.messages().size());
    // Every connection makes up to two endpoints: no rehashing while they appear.
    const std::size_t endpoints = sim.conns().size() * 2 + scenario.hosts.size();
    ep_index_ = FlatMap<uint32_t>(endpoints);
    eps_.reserve(endpoints);
    windows_.reserve(endpoints * kWindowWords);
    by_sport_ = FlatMap<Candidates>(endpoints);
    lat_log_.reserve(sim.messages().size());
}

int32_t TruthObserver::find(uint16_t host, uint32_t qpn) const {
    const uint32_t* e = ep_index_.find(ep_key(host, qpn));  // after finish(): endpoints
    return e ? static_cast<int32_t>(*e) : -1;
}

uint32_t TruthObserver::endpoint(uint16_t host, uint32_t qpn, uint16_t src_host, uint64_t t) {
    // SPEC 3: an endpoint (ip, qpn) exists once it has received a well-formed RoCE packet;
    // semantics.md "Sources": its state is kept per source host, in parts.
    const auto [index, added] =
        ep_index_.try_emplace(part_key(host, qpn, src_host), static_cast<uint32_t>(eps_.size()));
    if (added) {
        TruthEndpoint& e = eps_.emplace_back();
        windows_.resize(eps_.size() * kWindowWords, 0);
        e.host = host;
        e.qpn = qpn;
        e.src_host = src_host;
        e.t_first_ns = t;
    }
    return *index;
}

// The simulator announces packets about to be observed and connections about to post
// (see event_queue.hpp): load their endpoint and message state early. Hints only.
void TruthObserver::prefetch_conn(uint32_t conn) {
    __builtin_prefetch(conn_ep_.data() + std::size_t{conn} * 2);
}

void TruthObserver::prefetch_early(const SimPacket& p) const {
    if (p.conn == kNone || p.cm != CmKind::none) return;
    __builtin_prefetch(conn_ep_.data() + std::size_t{p.conn} * 2);
    if (p.msg_uid != kNone) {
        __builtin_prefetch(&ms_[p.msg_uid]);
        __builtin_prefetch(&sim_.messages()[p.msg_uid]);
    }
}

void TruthObserver::prefetch_late(const SimPacket& p) const {
    if (p.conn == kNone || p.cm != CmKind::none || p.dir != 1) return;
    const uint32_t b = conn_ep_[std::size_t{p.conn} * 2];
    if (b == kNone || eps_[b].open.size() == 0) return;
    const uint32_t uid = eps_[b].open.front();
    __builtin_prefetch(&ms_[uid]);
    __builtin_prefetch(&sim_.messages()[uid]);
}

void TruthObserver::prefetch(const SimPacket& p) {
    if (p.conn == kNone || p.cm != CmKind::none) return;
    const uint32_t e = conn_ep_[std::size_t{p.conn} * 2 + p.dir];
    if (e != kNone) {
        const char* ep = reinterpret_cast<const char*>(&eps_[e]);
        __builtin_prefetch(ep);
        __builtin_prefetch(ep + 64);
        if (p.dir == 0)  // a request: the word of its PSN in the window
            __builtin_prefetch(
                &windows_[std::size_t{e} * kWindowWords + (p.t.bth.psn % kWindow) / 64]);
    }
    if (p.msg_uid != kNone) __builtin_prefetch(&ms_[p.msg_uid]);
    // A response completes messages of the requester's peer, normally the endpoint its
    // connection's requests go to: its counters and open list (freeze touches three lines).
    const uint32_t b = p.dir == 1 ? conn_ep_[std::size_t{p.conn} * 2] : kNone;
    if (b != kNone) {
        const char* ep = reinterpret_cast<const char*>(&eps_[b]);
        __builtin_prefetch(ep);
        __builtin_prefetch(ep + 64);
        __builtin_prefetch(ep + 128);
    }
}

void TruthObserver::observe(const SimPacket& p) {
    // SPEC 7 summary: pkts = roce_pkts + non_roce_pkts + malformed.
    ++summary_.pkts;
    if (p.cls == PacketClass::background) {
        ++summary_.non_roce_pkts;
        return;
    }
    if (p.cls == PacketClass::malformed) {
        // SPEC 1: both ways of being too short count as `truncated`.
        static constexpr int kReason[] = {0, 1, 2, 1};
        ++summary_.malformed[kReason[p.variant]];
        return;  // "creates no endpoint and never touches any state"
    }
    ++summary_.roce_pkts;
    uint32_t e;
    if (p.conn != kNone && p.cm == CmKind::none) {
        // A connection's packets of one direction all go to one endpoint.
        uint32_t& cached = conn_ep_[p.conn * 2 + p.dir];
        if (cached == kNone) cached = endpoint(p.dst_host, p.t.bth.dest_qp, p.src_host, p.t_ns);
        e = cached;
    } else {
        e = endpoint(p.dst_host, p.t.bth.dest_qp, p.src_host, p.t_ns);
    }
    {
        // semantics.md "Endpoints and counters": every well-formed packet, its payload_len.
        TruthEndpoint& ep = eps_[e];
        ++ep.pkts;
        ep.bytes += p.payload_len;  // a CNP's 16 reserved bytes are its extension header
        ep.t_last_ns = p.t_ns;
        if (p.ecn == proto::kEcnCe) ++ep.ecn_ce;  // SPEC 6
    }
    const proto::OpcodeInfo& info = proto::opcode_info(p.t.bth.opcode);
    if (info.transport == proto::Transport::cnp) {
        ++eps_[e].cnps;  // SPEC 6; CNPs do not set `transport`
        return;
    }
    if (eps_[e].transport < 0) {
        eps_[e].transport = static_cast<int>(info.transport);
        eps_[e].t_transport_ns = p.t_ns;
    }
    if (p.cm != CmKind::none) {
        // semantics.md `cm`: REQ (Local Comm ID, Local QPN) from IP X to Y, REP (Remote Comm
        // ID, Local QPN) from Y to X pair (X, REQ.qpn) with (Y, REP.qpn) - their parts that
        // receive from each other ("Sources").
        if (p.cm == CmKind::req)
            cm_req_[cm_req_key(p.src_host, p.dst_host, p.cm_local_id)] = p.cm_qpn;
        if (p.cm == CmKind::rep) {
            const auto it = cm_req_.find(cm_req_key(p.dst_host, p.src_host, p.cm_remote_id));
            if (it != cm_req_.end()) {
                const uint64_t x = part_key(p.dst_host, it->second, p.src_host);
                const uint64_t y = part_key(p.src_host, p.cm_qpn, p.dst_host);
                cm_partner_[x] = y;
                cm_partner_[y] = x;
            }
        }
        return;
    }
    if (info.transport == proto::Transport::ud) return;
    // RC / UC: pairing is attempted before the packet is applied (semantics.md "Pairing").
    // A response marks its receiver as a requester first: that alone may let sport/ip pair it.
    register_source(e, p);
    if (!info.request) eps_[e].got_response = true;
    if (eps_[e].peer < 0) try_pair(e);
    if (info.request)
        on_request(e, p);
    else
        on_response(e, p);
}

// semantics.md: a part takes part in sport/ip pairing, between its host and its source
// host, with the first UDP source port it received RC/UC/XRC packets from.
void TruthObserver::register_source(uint32_t e, const SimPacket& p) {
    TruthEndpoint& ep = eps_[e];
    if (ep.has_src) return;
    ep.has_src = true;
    ep.sport = p.sport;
    by_sport_[sport_key(ep.host, ep.src_host, ep.sport)].add(e);
    by_ip_[ip_key(ep.host, ep.src_host)].add(e);
    by_first_ip_[ip_key(ep.host, ep.src_host)].push_back(e);
}

void TruthObserver::try_pair(uint32_t e) {
    const TruthEndpoint& ep = eps_[e];
    // SPEC 3 order: host (not modelled: no tracer), cm, sport, ip.
    // An endpoint that an observed CM exchange names pairs with the endpoint it names and
    // with nothing else, and is no candidate for another endpoint's sport/ip rule: the
    // observer knows its peer. (Not spelled out in semantics.md; dataplane/state does the
    // same - see the insert-gen report. Without it, the ip rule can pair two responders of
    // connections in opposite directions before the CM-named requester exists.)
    if (const uint64_t* cm = cm_partner_.find(part_key(ep.host, ep.qpn, ep.src_host))) {
        const uint32_t* f = ep_index_.find(*cm);
        if (f && eps_[*f].peer < 0) make_pair(e, *f, PairRule::cm);
        return;
    }
    if (!ep.has_src) return;
    auto only = [](const FlatMap<Candidates>& m, uint64_t k) -> int64_t {
        const Candidates* c = m.find(k);
        return c ? c->only() : -1;
    };
    auto named_by_cm = [this](int64_t f) {
        return cm_partner_.contains(part_key(eps_[f].host, eps_[f].qpn, eps_[f].src_host));
    };
    // sport: e is the only endpoint at X receiving s from Y, f the only one at Y receiving s from
    // X.
    if (only(by_sport_, sport_key(ep.host, ep.src_host, ep.sport)) == e) {
        const int64_t f = only(by_sport_, sport_key(ep.src_host, ep.host, ep.sport));
        if (f >= 0 && eps_[f].peer < 0 && !named_by_cm(f) && can_be_peers(ep, eps_[f])) {
            make_pair(e, static_cast<uint32_t>(f), PairRule::sport);
            return;
        }
    }
    // ip: e the only RC/UC/XRC endpoint at X receiving from Y, f the only one at Y from X.
    if (only(by_ip_, ip_key(ep.host, ep.src_host)) == e) {
        const int64_t f = only(by_ip_, ip_key(ep.src_host, ep.host));
        if (f >= 0 && eps_[f].peer < 0 && !named_by_cm(f) && can_be_peers(ep, eps_[f]))
            make_pair(e, static_cast<uint32_t>(f), PairRule::ip);
    }
}

// semantics.md: sport/ip/psn pair a requester with its responder, so one of the two must
// have received a response - except UC, which has none. Without this the ip rule pairs the
// two responders of opposite connections between two hosts before a requester is seen.
bool TruthObserver::can_be_peers(const TruthEndpoint& e, const TruthEndpoint& f) const {
    const int uc = static_cast<int>(proto::Transport::uc);
    return e.got_response || f.got_response || (e.transport == uc && f.transport == uc);
}

// semantics.md `psn`: f's outstanding range is its request window (max_psn - 1024, max_psn],
// extended past max_psn when the request at max_psn is a READ - to its observed Last/Only
// response, else by one PSN per 256 B of its length.
bool TruthObserver::psn_outstanding(const TruthEndpoint& f, uint32_t psn) const {
    if (!f.has_max) return false;  // never received a request: nothing outstanding
    uint32_t extra = 0;
    const MsgInfo& at_max = sim_.messages()[f.max_uid];
    if (at_max.op == OpType::read) {
        const MsgState& r = ms_[f.max_uid];
        extra =
            r.last_resp_seen
                ? psn_sub(r.resp_last_psn, f.max_psn)
                : static_cast<uint32_t>((uint64_t{at_max.len} + kSmallestMtu - 1) / kSmallestMtu);
    }
    // PSN in (max_psn - 1024, max_psn + extra]: not newer than the end and less than
    // 1024 + extra behind it.
    const uint32_t end = psn_add(f.max_psn, extra);
    return psn_not_older(end, psn) && psn_sub(end, psn) < kWindow + extra;
}

// semantics.md `psn`, the last resort on a response to the unpaired A at X from Y: the
// candidates are the unpaired endpoints at Y receiving RC/UC/XRC only from X, with no CM
// pair and at least one request; exactly one whose outstanding range holds the PSN pairs.
void TruthObserver::try_pair_by_psn(uint32_t a, uint32_t psn) {
    const TruthEndpoint& ep = eps_[a];
    if (!ep.has_src || cm_partner_.contains(part_key(ep.host, ep.qpn, ep.src_host))) return;
    const auto it = by_first_ip_.find(ip_key(ep.src_host, ep.host));
    if (it == by_first_ip_.end() || it->second.size() > kMaxPsnCandidates) return;
    int64_t match = -1;
    for (uint32_t f : it->second) {
        const TruthEndpoint& c = eps_[f];
        if (f == a || c.peer >= 0 || cm_partner_.contains(part_key(c.host, c.qpn, c.src_host)) ||
            !psn_outstanding(c, psn))
            continue;
        if (match >= 0) return;  // two candidates hold it: ambiguous
        match = f;
    }
    if (match >= 0) make_pair(a, static_cast<uint32_t>(match), PairRule::psn);
}

void TruthObserver::make_pair(uint32_t e, uint32_t f, PairRule rule) {
    eps_[e].peer = static_cast<int32_t>(f);
    eps_[f].peer = static_cast<int32_t>(e);
    eps_[e].pair_by = eps_[f].pair_by = rule;
    ++summary_.connections;
}

void TruthObserver::touch(MsgState& m, uint64_t t) {
    if (!m.seen_any) {
        m.seen_any = true;
        m.t_first = t;
    }
    m.t_last = t;
}

void TruthObserver::on_request(uint32_t b, const SimPacket& p) {
    TruthEndpoint& ep = eps_[b];
    const uint32_t psn = p.t.bth.psn;
    const uint32_t uid = p.msg_uid;
    const MsgInfo& mi = sim_.messages()[uid];
    uint64_t* const window = &windows_[std::size_t{b} * kWindowWords];
    auto bit = [&](uint32_t q) -> bool { return (window[(q % kWindow) / 64] >> (q % 64)) & 1; };
    auto set_bit = [&](uint32_t q) { window[(q % kWindow) / 64] |= uint64_t{1} << (q % 64); };
    auto clear_bit = [&](uint32_t q) { window[(q % kWindow) / 64] &= ~(uint64_t{1} << (q % 64)); };

    // SPEC 4 classification.
    bool dup = false;
    if (!ep.has_max) {
        ep.has_max = true;  // "A direction's first packet never opens a gap."
        ep.max_psn = psn;
        ep.max_uid = uid;
        ep.max_is_read = mi.op == OpType::read;
        set_bit(psn);
    } else if (psn_newer(psn, ep.max_psn)) {
        // `new`. The expected PSN is max_psn + 1, except after a READ (SPEC 4, semantics.md
        // "READ rule"): its last response PSN + 1 if that response was observed, else no gap.
        bool check = true;
        uint32_t expected = psn_add(ep.max_psn, 1);
        if (ep.max_is_read) {
            MsgState& r = ms_[ep.max_uid];
            if (!r.next_req_set) {  // SPEC 5: READ psn_last falls back to the next request - 1
                r.next_req_set = true;
                r.next_req_psn = psn;
            }
            check = r.last_resp_seen;
            if (check) expected = psn_add(r.resp_last_psn, 1);
        }
        if (check && psn_newer(psn, expected)) {
            ++ep.gaps;
            ep.missing += psn_sub(psn, expected);  // SPEC 4: missing = PSN - expected
        }
        const uint32_t advance = psn_sub(psn, ep.max_psn);
        if (advance >= kWindow)
            std::fill(window, window + kWindowWords, 0);
        else
            for (uint32_t i = 1; i <= advance; ++i) clear_bit(psn_add(ep.max_psn, i));
        ep.max_psn = psn;
        ep.max_uid = uid;
        ep.max_is_read = mi.op == OpType::read;
        set_bit(psn);
    } else if (psn_sub(ep.max_psn, psn) >= kWindow || bit(psn)) {
        dup = true;  // SPEC 4 `dup`: seen, or older than the window (semantics.md)
        ++ep.dup_pkts;
    } else {
        ++ep.ooo_pkts;  // SPEC 4 `late`
        set_bit(psn);
    }

    MsgState& m = ms_[uid];
    if (m.state == 3) return;  // frozen: later duplicates count only at the endpoint (SPEC 5)
    touch(m, p.t_ns);          // t_first/t_last: any observation of the message (SPEC 5)
    m.src_host = p.src_host;
    if (dup) {
        ++m.retx;  // SPEC 5 retx_pkts: packets of the message classified dup
        return;
    }
    // First observation of this PSN. READ pkts/bytes count responses only (SPEC 5).
    if (mi.op != OpType::read) {
        ++m.pkts;
        m.bytes += p.payload_len;
    }
    m.newest_off = std::max(m.newest_off, psn_sub(psn, mi.psn_first));
    if (p.index + 1 == mi.npkts) m.last_seen = true;
    if (m.state == 0) m.state = 1;
    if (p.index == 0 && m.state == 1) {
        // semantics.md: a message exists once its First/Only (or request) is observed;
        // packets seen before it join it.
        m.state = 2;
        ep.held -= m.held;
        if (ep.open.size() >= kMaxOpenMessages) {
            // semantics.md: beyond 256 outstanding messages the oldest is frozen as it stands.
            ++msgs_overflow_;
            freeze(b, ep.open.front(), TruthStatus::incomplete, std::nullopt);
        }
        ep.open.push_back(uid);
    } else if (m.state == 1) {
        ++m.held;
        max_held_ = std::max(max_held_, ++ep.held);
    }
    // The connection is UC exactly when its requests carry UC opcodes (its ConnInfo would
    // be one more cache miss per packet).
    const bool uc = proto::opcode_info(p.t.bth.opcode).transport == proto::Transport::uc;
    if (uc && m.state == 2 && m.pkts == mi.npkts)
        freeze(b, uid, TruthStatus::ok, std::nullopt);  // SPEC 5: UC ok once First..Last seen
}

uint32_t TruthObserver::psn_last(uint32_t uid) const {
    const MsgInfo& mi = sim_.messages()[uid];
    const MsgState& m = ms_[uid];
    switch (mi.op) {
        case OpType::read:
            // SPEC 5 / semantics.md: its Last/Only response; else the next request - 1; else psn.
            if (m.last_resp_seen) return m.resp_last_psn;
            if (m.next_req_set) return proto::psn_sub(m.next_req_psn, 1);
            return mi.psn_first;
        case OpType::cmp_swap:
        case OpType::fetch_add:
            return mi.psn_first;
        default:
            // semantics.md: the Last/Only; never observed -> the newest PSN observed.
            return m.last_seen ? psn_add(mi.psn_first, mi.npkts - 1)
                               : psn_add(mi.psn_first, m.newest_off);
    }
}

// ACK-class responses complete SEND/WRITE/atomics whose psn_last is not newer than the
// PSN (inclusive); NAKs those whose psn_last is older (exclusive). READs never (SPEC 5,
// semantics.md "A READ completes only by its own Last/Only response").
void TruthObserver::complete_acked(uint32_t b, uint32_t psn, uint64_t t, bool inclusive) {
    scratch_.clear();  // freeze() edits the open list: collect first
    for (uint32_t uid : eps_[b].open) {
        const MsgInfo& mi = sim_.messages()[uid];
        if (mi.op == OpType::read) continue;
        // A SEND/WRITE whose Last/Only has not been observed has no psn_last yet (its newest
        // packet is a First/Middle: more follow), so no response completes it; the "newest
        // observed PSN" of semantics.md applies only when it is frozen otherwise.
        if (is_send_write(mi.op) && !ms_[uid].last_seen) continue;
        const uint32_t last = psn_last(uid);
        if (inclusive ? psn_not_older(psn, last) : psn_newer(psn, last)) scratch_.push_back(uid);
    }
    for (uint32_t uid : scratch_) freeze(b, uid, TruthStatus::ok, t);
}

void TruthObserver::on_response(uint32_t a, const SimPacket& p) {
    TruthEndpoint& ep = eps_[a];
    const uint32_t psn = p.t.bth.psn;
    const uint8_t code = p.t.bth.opcode;
    const proto::OpcodeInfo& info = proto::opcode_info(code);
    const bool is_ack_opcode = code == proto::op::kAck;
    const proto::AethClass cls = proto::aeth_class(p.t.aeth.syndrome);
    const proto::NakCode nak = proto::nak_code(p.t.aeth.syndrome);
    if (is_ack_opcode && cls == proto::AethClass::rnr_nak) ++ep.naks.rnr;  // SPEC 7 naks{}
    if (is_ack_opcode && cls == proto::AethClass::nak) {
        switch (nak) {
            case proto::NakCode::psn_seq_error:
                ++ep.naks.seq;
                break;
            case proto::NakCode::invalid_request:
                ++ep.naks.inv;
                break;
            case proto::NakCode::remote_access:
                ++ep.naks.access;
                break;
            case proto::NakCode::remote_op:
                ++ep.naks.op;
                break;
        }
    }
    // semantics.md: `psn` is tried on a response when cm/sport/ip did not pair A.
    if (ep.peer < 0) try_pair_by_psn(a, psn);
    // semantics.md: completion uses the pair; unpaired, responses complete nothing.
    if (ep.peer < 0) return;
    const uint32_t b = static_cast<uint32_t>(ep.peer);

    if (info.kind == proto::OpKind::read_response) {
        const MsgInfo& mi = sim_.messages()[p.msg_uid];
        MsgState& m = ms_[p.msg_uid];
        if (m.state == 2) {
            touch(m, p.t_ns);
            std::vector<bool>& seen = resp_seen_[p.msg_uid];
            if (seen.empty()) seen.assign(mi.npsn, false);
            if (!seen[p.index]) {  // SPEC 5: distinct response PSNs and their payload
                seen[p.index] = true;
                ++m.pkts;
                m.bytes += p.payload_len;
            }
            // semantics.md: its own Last/Only completes it, counted like any response - whether
            // or not its First/Only was (one observed before the endpoint was paired was not).
            const bool last =
                info.position == proto::Position::last || info.position == proto::Position::only;
            if (last) {
                m.last_resp_seen = true;
                m.resp_last_psn = psn;
            }
        }
        // Any READ response acknowledges all earlier requests (SPEC 5).
        complete_acked(b, psn, p.t_ns, true);
        if (m.state == 2 && m.last_resp_seen)
            freeze(b, p.msg_uid, TruthStatus::ok, p.t_ns);  // READ: its own Last/Only
        return;
    }
    if (info.kind == proto::OpKind::atomic_ack || (is_ack_opcode && cls == proto::AethClass::ack)) {
        complete_acked(b, psn, p.t_ns, true);
        return;
    }
    if (!is_ack_opcode || cls == proto::AethClass::reserved) return;
    // A NAK or RNR NAK: remembered for the naks/rnr_naks of the messages it hits, even
    // ones whose first packet is observed later (SPEC 5).
    const bool rnr = cls == proto::AethClass::rnr_nak;
    eps_[b].nak_history.push_back({psn, rnr, static_cast<uint8_t>(nak)});
    complete_acked(b, psn, p.t_ns, false);  // IBTA: a NAK acknowledges everything before it
    if (!rnr && proto::nak_is_fatal(nak)) {
        // SPEC 5 freeze: a fatal NAK with a PSN inside the message.
        const TruthStatus st = nak == proto::NakCode::remote_access ? TruthStatus::nak_access
                               : nak == proto::NakCode::remote_op   ? TruthStatus::nak_op
                                                                    : TruthStatus::nak_inv;
        const OpenMessages open = eps_[b].open;  // freeze() edits the list
        for (uint32_t uid : open)
            if (in_range(psn, sim_.messages()[uid].psn_first, psn_last(uid)))
                freeze(b, uid, st, std::nullopt);
    }
}

void TruthObserver::freeze(uint32_t b, uint32_t uid, TruthStatus status,
                           std::optional<uint64_t> t_ack) {
    TruthEndpoint& ep = eps_[b];
    MsgState& m = ms_[uid];
    const MsgInfo& mi = sim_.messages()[uid];
    m.state = 3;
    ep.open.erase(uid);
    const std::optional<HeldLast> held_last =
        mi.op == OpType::send && !m.last_seen ? absorb_held_after(b, uid) : std::nullopt;

    TruthMsg r;
    r.msg_uid = uid;
    r.src_host = m.src_host;  // only messages with an observed request are frozen
    r.dst_host = ep.host;
    r.dst_qpn = ep.qpn;
    if (ep.peer >= 0) r.src_qpn = eps_[ep.peer].qpn;  // SPEC 7: the paired peer's QPN
    r.op = mi.op;
    r.psn_first = mi.psn_first;
    r.psn_last = psn_last(uid);
    if (is_send_write(mi.op) && m.last_seen) {  // SPEC 5: imm/inv from the Last/Only
        if (mi.imm) r.imm = mi.imm_value;
        if (mi.inv) r.inv = mi.inv_rkey;
    }
    if (held_last) {  // a held Last it took ends it, with that Last's imm/inv
        r.psn_last = held_last->psn;
        r.imm = held_last->imm;
        r.inv = held_last->inv;
    }
    if (mi.op == OpType::write || mi.op == OpType::read) {  // RETH of First/Only / the request
        r.va = mi.va;
        r.rkey = mi.rkey;
        r.dma_len = mi.len;
    } else if (is_atomic(mi.op)) {  // AtomicETH; dma_len null
        r.va = mi.va;
        r.rkey = mi.rkey;
    }
    r.pkts = m.pkts;
    r.bytes = m.bytes;
    r.t_first_ns = m.t_first;
    r.t_last_ns = m.t_last;
    r.t_ack_ns = t_ack;
    r.retx_pkts = m.retx;
    // SPEC 5 naks/rnr_naks: NAKs whose PSN lies in [psn_first, psn_last], seen so far; the
    // latest sequence/RNR NAK names the status of a message that never completed.
    const TruthStatus* latest = nullptr;
    static constexpr TruthStatus kSeq = TruthStatus::nak_seq, kRnr = TruthStatus::nak_rnr;
    for (const auto& n : ep.nak_history) {
        if (!in_range(n.psn, r.psn_first, r.psn_last)) continue;
        if (n.rnr) {
            ++r.rnr_naks;
            latest = &kRnr;
        } else {
            ++r.naks;
            if (n.code == static_cast<uint8_t>(proto::NakCode::psn_seq_error)) latest = &kSeq;
        }
    }
    r.status = status;
    if (status == TruthStatus::incomplete && latest) r.status = *latest;

    ++ep.msgs[static_cast<int>(mi.op)];
    if (t_ack) lat_log_.emplace_back(b, *t_ack - m.t_first);
    ++summary_.msgs;
    if (msg_sink_)
        msg_sink_->on_msg(r);
    else
        out_.push_back(r);
}

// semantics.md "Messages": a SEND frozen with its end unknown takes the packets held for
// later messages whose First was never observed, up to the first observed First after it
// and at most through a held Last - an observer cannot tell them from its own packets past
// a hole (UC: its Last and the next SEND's First lost in one hole; nothing retransmits).
// Only SENDs: a WRITE's First carries its length. Packets of other operations do not join
// and do not end the range (the engine holds them apart and passes over them).
std::optional<TruthObserver::HeldLast> TruthObserver::absorb_held_after(uint32_t b, uint32_t uid) {
    MsgState& m = ms_[uid];
    const HugeVector<MsgInfo>& msgs = sim_.messages();
    const ConnInfo& conn = sim_.conns()[msgs[uid].conn];
    const uint32_t end = conn.first_msg + conn.num_msgs;
    for (uint32_t y = uid + 1; y < end; ++y) {
        MsgState& n = ms_[y];
        const MsgInfo& ni = msgs[y];
        if (n.state >= 2) break;  // its First was observed: the range ends before it
        if (n.state == 0 || ni.op != OpType::send) continue;
        m.pkts += n.pkts;
        m.bytes += n.bytes;
        m.retx += n.retx;
        m.t_first = std::min(m.t_first, n.t_first);
        m.t_last = std::max(m.t_last, n.t_last);
        const uint32_t newest = psn_add(ni.psn_first, n.newest_off);
        m.newest_off = std::max(m.newest_off, psn_sub(newest, msgs[uid].psn_first));
        eps_[b].held -= n.held;
        const bool last = n.last_seen;
        // Its packets are the frozen message's now; should its First still come (RC), it
        // opens with what follows, and their copies count as its retransmissions.
        n = MsgState{};
        n.state = 1;
        if (last) {
            HeldLast h;
            h.psn = psn_add(ni.psn_first, ni.npkts - 1);
            if (ni.imm) h.imm = ni.imm_value;
            if (ni.inv) h.inv = ni.inv_rkey;
            return h;
        }
    }
    return std::nullopt;
}

// semantics.md "Sources": an endpoint's `qp` record merges its parts - counters summed,
// `transport` of the earliest first non-CNP packet (ties: RC, UC, UD, XRC), the peer of a
// paired part (an endpoint paired in several parts: the lowest peer IP, then QPN, then rule).
void TruthObserver::merge_parts() {
    HugeVector<TruthEndpoint> merged;
    merged.reserve(eps_.size());
    FlatMap<uint32_t> index(eps_.size());
    std::vector<uint32_t> to(eps_.size());
    // Each part's (host, qpn), read by peer_rank() while the parts are being moved.
    std::vector<std::pair<uint16_t, uint32_t>> id(eps_.size());
    for (uint32_t i = 0; i < eps_.size(); ++i) id[i] = {eps_[i].host, eps_[i].qpn};
    const auto peer_rank = [&](const TruthEndpoint& e) {
        const auto [host, qpn] = id[static_cast<std::size_t>(e.peer)];
        return std::make_tuple(sc_.hosts[host].ip, qpn, static_cast<int>(e.pair_by));
    };
    for (uint32_t i = 0; i < eps_.size(); ++i) {
        TruthEndpoint& part = eps_[i];
        const auto [slot, added] =
            index.try_emplace(ep_key(part.host, part.qpn), static_cast<uint32_t>(merged.size()));
        to[i] = *slot;
        if (added) {
            merged.push_back(std::move(part));
            continue;
        }
        TruthEndpoint& e = merged[*slot];
        e.pkts += part.pkts;
        e.bytes += part.bytes;
        e.t_first_ns = std::min(e.t_first_ns, part.t_first_ns);
        e.t_last_ns = std::max(e.t_last_ns, part.t_last_ns);
        for (std::size_t op = 0; op < e.msgs.size(); ++op) e.msgs[op] += part.msgs[op];
        e.dup_pkts += part.dup_pkts;
        e.ooo_pkts += part.ooo_pkts;
        e.gaps += part.gaps;
        e.missing += part.missing;
        e.naks.seq += part.naks.seq;
        e.naks.rnr += part.naks.rnr;
        e.naks.inv += part.naks.inv;
        e.naks.access += part.naks.access;
        e.naks.op += part.naks.op;
        e.cnps += part.cnps;
        e.ecn_ce += part.ecn_ce;
        if (part.transport >= 0 &&
            (e.transport < 0 || std::make_pair(part.t_transport_ns, part.transport) <
                                    std::make_pair(e.t_transport_ns, e.transport))) {
            e.transport = part.transport;
            e.t_transport_ns = part.t_transport_ns;
        }
        // Still part indexes here: peer_rank() reads the peer part.
        if (part.peer >= 0 && (e.peer < 0 || peer_rank(part) < peer_rank(e))) {
            e.peer = part.peer;
            e.pair_by = part.pair_by;
        }
    }
    for (TruthEndpoint& e : merged)
        if (e.peer >= 0) e.peer = static_cast<int32_t>(to[static_cast<std::size_t>(e.peer)]);
    for (auto& [e, lat] : lat_log_) e = to[e];
    eps_ = std::move(merged);
    ep_index_ = std::move(index);
}

void TruthObserver::finish() {
    // SPEC 5: at the end every open message is frozen as it stands.
    for (uint32_t b = 0; b < eps_.size(); ++b) {
        const OpenMessages open = eps_[b].open;  // freeze() edits the list
        for (uint32_t uid : open) freeze(b, uid, TruthStatus::incomplete, std::nullopt);
    }
    merge_parts();
    summary_.endpoints = eps_.size();
    // Latencies grouped per endpoint (a counting sort keeps each one's freeze order).
    lat_begin_.assign(eps_.size() + 1, 0);
    for (const auto& [e, lat] : lat_log_) ++lat_begin_[e + 1];
    for (std::size_t e = 0; e < eps_.size(); ++e) lat_begin_[e + 1] += lat_begin_[e];
    lat_values_.resize(lat_log_.size());
    std::vector<std::size_t> fill(lat_begin_.begin(), lat_begin_.end() - 1);
    for (const auto& [e, lat] : lat_log_) lat_values_[fill[e]++] = lat;
    lat_log_.clear();
    lat_log_.shrink_to_fit();
}

}  // namespace insert::gen
