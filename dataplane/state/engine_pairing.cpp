// Pairing rules (SPEC.md section 3; docs/semantics.md "Pairing").
#include <cstring>

#include "dataplane/common/hash.hpp"
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

namespace {
constexpr uint32_t kSmallestPathMtu = 256;
// The psn rule looks at every endpoint between two hosts on a response; past this many
// it gives up rather than spend unbounded time per packet.
constexpr uint32_t kMaxPsnCandidates = 64;

// A hash of the unordered host pair, so that both ends of a connection share a slot (an
// endpoint at x receiving from y pairs with one at y receiving from x). Computed on every
// packet of an unpaired endpoint, so from the addresses' last 4 bytes only (an IPv4
// address, the interface part of an IPv6 one): a collision only costs attempts.
uint32_t pair_slot(const proto::IpAddress& a, const proto::IpAddress& b) {
    uint32_t x, y;
    std::memcpy(&x, a.bytes.data() + 12, 4);
    std::memcpy(&y, b.bytes.data() + 12, 4);
    const uint64_t ordered = x < y ? uint64_t{x} << 32 | y : uint64_t{y} << 32 | x;
    constexpr unsigned kSlotBits = 12;  // the multiplication's top bits are its best
    static_assert(kPairSlots == 1u << kSlotBits);
    return static_cast<uint32_t>((ordered * common::kGoldenRatio64) >> (64 - kSlotBits));
}

}  // namespace

void EngineImpl::pairing_changed(const Endpoint& ep) noexcept {
    // The rules of an endpoint look at endpoints of its own host pair only, except CM's.
    // A slot shared by several host pairs only makes more attempts, never fewer.
    if (cm_pairs_.size() > 0)
        ++pair_generation_;
    else
        ++pair_slots_[pair_slot(ep.key.ip, ep.src_ip)];
}

uint64_t EngineImpl::pairing_version(const Endpoint& ep) const noexcept {
    // Both counters only grow: the sum changes whenever either does.
    return pair_generation_ + pair_slots_[pair_slot(ep.key.ip, ep.src_ip)];
}

// Registers a part in the pairing tables on its first RC/UC/XRC packet (its source IP is
// the part's own, docs/semantics.md "Sources"), and notes a second UDP source port.
void EngineImpl::note_source(uint32_t idx, const proto::ParsedPacket& pkt) noexcept {
    Endpoint& ep = endpoints_[idx];
    if (ep.has_source) {
        if (!ep.multi_source_port && ep.src_port != pkt.src_port) {
            ep.multi_source_port = true;
            pairing_changed(ep);
        }
        return;
    }
    ep.has_source = true;
    ep.src_port = pkt.src_port;
    pairing_changed(ep);
    ep.pair_generation = UINT64_MAX;  // a candidate now: try on this packet
    for (const uint32_t sport : {0u, kPortKeyFlag | pkt.src_port}) {
        PairCount* pc = hosts_.insert({ep.key.ip, ep.src_ip, sport}, PairCount{});
        if (!pc) {
            // No room to count it: keep the part out of the rules rather than risk a
            // wrong "only one" answer for it or its neighbours.
            ep.pairing_excluded = true;
            continue;
        }
        ++pc->count;
        pc->rep = pc->count == 1 ? idx : kNoIndex;
        if (sport == 0) {
            ep.next_same_source = pc->head;
            pc->head = idx;
        }
    }
}

void EngineImpl::forget_source(Endpoint& ep) noexcept {
    if (!ep.has_source) return;
    for (const uint32_t sport : {0u, kPortKeyFlag | ep.src_port}) {
        const HostPairKey key{ep.key.ip, ep.src_ip, sport};
        PairCount* pc = hosts_.find(key);
        if (!pc) continue;
        if (sport == 0) {
            const uint32_t me = static_cast<uint32_t>(&ep - endpoints_.get());
            uint32_t* link = &pc->head;
            while (*link != kNoIndex && *link != me) link = &endpoints_[*link].next_same_source;
            if (*link == me) *link = ep.next_same_source;
        }
        if (--pc->count == 0)
            hosts_.erase(key);
        else
            pc->rep = kNoIndex;  // the survivor is unknown here; it stays unpaired by these rules
    }
    pairing_changed(ep);
}

bool EngineImpl::eligible(const Endpoint& f, const proto::IpAddress& from) const noexcept {
    return f.live && f.pair_by == PairBy::none && f.has_source && !f.pairing_excluded &&
           f.src_ip == from && cm_pairs_.find(PartKey{f.key, f.src_ip}) == nullptr;
}

// SPEC 3 pairs a requester (it receives responses) with its responder (it receives
// requests). Two responders of opposite connections between the same hosts would satisfy
// the "only endpoint" wording too, so one of the two must have received a response; UC
// has no responses, so two UC endpoints qualify as they are.
bool EngineImpl::can_be_peers(const Endpoint& e, const Endpoint& f) const noexcept {
    return e.got_response || f.got_response ||
           (e.transport == TransportFamily::uc && f.transport == TransportFamily::uc);
}

void EngineImpl::try_pair(uint32_t idx, uint64_t ts) noexcept {
    Endpoint& ep = endpoints_[idx];
    ep.pair_generation = pairing_version(ep);
    // host: needs QP attributes from the host tracer (not wired into the dataplane yet).
    // cm: a REQ/REP exchange named both endpoints; no other rule may override it.
    if (const PartKey* partner = cm_pairs_.find(PartKey{ep.key, ep.src_ip})) {
        const uint32_t f = find_part(partner->endpoint, partner->src);
        if (f != kNoIndex && f != idx && endpoints_[f].live &&
            endpoints_[f].pair_by == PairBy::none)
            make_pair(idx, f, PairBy::cm, ts);
        return;
    }
    if (!ep.has_source || ep.pairing_excluded) return;
    const proto::IpAddress& x = ep.key.ip;
    const proto::IpAddress& y = ep.src_ip;
    if (!ep.multi_source_port) {
        const uint32_t s = kPortKeyFlag | ep.src_port;
        const PairCount* mine = hosts_.find({x, y, s});
        const PairCount* theirs = hosts_.find({y, x, s});
        if (mine && mine->count == 1 && theirs && theirs->count == 1 && theirs->rep != kNoIndex) {
            const Endpoint& f = endpoints_[theirs->rep];
            if (theirs->rep != idx && eligible(f, x) && !f.multi_source_port &&
                can_be_peers(ep, f)) {
                make_pair(idx, theirs->rep, PairBy::sport, ts);
                return;
            }
        }
    }
    const PairCount* mine = hosts_.find({x, y, 0});
    const PairCount* theirs = hosts_.find({y, x, 0});
    if (mine && mine->count == 1 && theirs && theirs->count == 1 && theirs->rep != kNoIndex &&
        theirs->rep != idx && eligible(endpoints_[theirs->rep], x) &&
        can_be_peers(ep, endpoints_[theirs->rep]))
        make_pair(idx, theirs->rep, PairBy::ip, ts);
}

bool EngineImpl::psn_outstanding(const Endpoint& f, uint32_t psn) const noexcept {
    // The request window (SPEC 4: the last 1024 PSNs) plus the responses a READ at max_psn
    // may still produce (its observed last response, else its length at the smallest
    // path MTU, 256 B).
    if (f.window.empty()) return false;
    const uint32_t max_psn = f.window.max_psn();
    uint32_t extra = 0;
    if (f.last_request_read)
        extra = f.read_last_known ? proto::psn_sub(f.read_last_psn, max_psn)
                                  : (f.read_dma_len + kSmallestPathMtu - 1) / kSmallestPathMtu;
    const uint32_t end = proto::psn_add(max_psn, extra);
    return !proto::psn_newer(psn, end) && proto::psn_sub(end, psn) < PsnWindow::kSize + extra;
}

bool EngineImpl::try_pair_by_psn(uint32_t idx, uint32_t psn, uint64_t ts) noexcept {
    Endpoint& ep = endpoints_[idx];
    if (!ep.has_source || ep.pairing_excluded || cm_pairs_.find(PartKey{ep.key, ep.src_ip}))
        return false;
    const PairCount* theirs = hosts_.find({ep.src_ip, ep.key.ip, 0});
    if (!theirs) return false;
    uint32_t match = kNoIndex;
    uint32_t seen = 0;
    for (uint32_t f = theirs->head; f != kNoIndex; f = endpoints_[f].next_same_source) {
        if (++seen > kMaxPsnCandidates) return false;  // too many to decide per packet
        const Endpoint& cand = endpoints_[f];
        if (f == idx || !eligible(cand, ep.key.ip) || !psn_outstanding(cand, psn)) continue;
        if (match != kNoIndex) return false;  // two candidates: ambiguous
        match = f;
    }
    if (match == kNoIndex) return false;
    make_pair(idx, match, PairBy::psn, ts);
    return true;
}

void EngineImpl::make_pair(uint32_t e, uint32_t f, PairBy by, uint64_t ts) noexcept {
    if (report_pending_) {  // both records name their peers
        report_before_change(e);
        report_before_change(f);
    }
    Endpoint& a = endpoints_[e];
    Endpoint& b = endpoints_[f];
    a.peer_ip = b.key.ip;
    a.peer_qpn = b.key.qpn;
    a.peer_index = f;
    a.peer_incarnation = b.incarnation;
    a.pair_by = by;
    b.peer_ip = a.key.ip;
    b.peer_qpn = a.key.qpn;
    b.peer_index = e;
    b.peer_incarnation = a.incarnation;
    b.pair_by = by;
    // Prefetch hints: a packet to either one fetches the other's lines at once (only the
    // index's parts have an index entry to hold one).
    if (!a.secondary)
        if (IndexEntry* entry = index_.find(a.key)) entry->peer_hint = f;
    if (!b.secondary)
        if (IndexEntry* entry = index_.find(b.key)) entry->peer_hint = e;
    pairing_changed(a);
    pairing_changed(b);
    bump(counters_.connections);
    Record r;
    r.type = RecordType::event;
    r.event = EventRecord{};
    r.event.kind = EventKind::pair;
    r.event.ip = a.key.ip;
    r.event.qpn = a.key.qpn;
    r.event.peer_ip = b.key.ip;
    r.event.peer_qpn = b.key.qpn;
    r.event.pair_by = by;
    r.event.t_ns = ts;
    push(r);
}

}  // namespace insert::state
