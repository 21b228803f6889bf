#include <algorithm>
#include <cmath>
#include <new>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/state/cm_mad.hpp"
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

using proto::OpKind;
using proto::ParsedPacket;
using proto::Position;
using proto::Transport;

namespace {

// Tables other than the endpoints are sized from the endpoint capacity (1M endpoints must
// fit in under 1 GB): host-pair entries, two per endpoint (each endpoint with a source
// counts in a per-IP entry and a per-UDP-port entry; endpoints between the same hosts share
// the per-IP one, but with one connection per host pair nothing is shared - too few
// entries would leave endpoints out of pairing once the table nears capacity); CM
// exchanges for one endpoint in four (two endpoints per connection, both sides'
// requesters); one open message per endpoint on average (about half the endpoints are
// responders, each with a couple in flight); orphan blocks for one endpoint in sixteen
// (only reordered multi-packet messages use them, briefly).
constexpr uint32_t kHostPairsPerEndpoint = 2;
constexpr uint32_t kCmRequestsDivisor = 4;
constexpr uint32_t kMessagesPerEndpoint = 1;
constexpr uint32_t kOrphanBlocksDivisor =
    32;  // blocks of 16 runs: as much memory as 8-run blocks for 1 in 16
constexpr uint32_t kMinPoolSlots = 64;
// Parts from a second source IP (docs/semantics.md "Sources"): most endpoints have one
// source; UD QPs and QP 1 have one per sender. Up to one slot in two may be such a part.
constexpr uint32_t kPartsDivisor = 2;
// Open event windows (docs/semantics.md "Events"): one per destination endpoint and kind
// with events in the current second - congested or lossy endpoints, a few percent of them
// at once in practice. An event that finds the table full is written as a window of its
// own (counted in events_unwindowed).
constexpr uint32_t kEventWindowsDivisor = 16;
// Entries a growing hash table starts with room for (EngineConfig::grow_tables).
constexpr std::size_t kInitialTableEntries = 4096;

uint32_t pool_size(uint32_t endpoints, uint32_t divisor) {
    return std::max(kMinPoolSlots, endpoints / divisor);
}

// Without idle eviction there is no deadline wheel: its arrays (locked on a live port)
// are not made.
uint32_t wheel_slots(const EngineConfig& config) {
    return config.idle_timeout_ns != 0 ? config.max_endpoints : 0;
}

std::size_t initial_entries(const EngineConfig& config) {
    return config.grow_tables ? kInitialTableEntries : 0;
}

TransportFamily family_of(Transport t) {
    switch (t) {
        case Transport::rc:
            return TransportFamily::rc;
        case Transport::uc:
            return TransportFamily::uc;
        case Transport::ud:
            return TransportFamily::ud;
        case Transport::xrc:
            return TransportFamily::xrc;
        default:
            return TransportFamily::unknown;
    }
}

}  // namespace

uint64_t refused_endpoints(uint64_t bits) {
    // Linear counting: n = -m ln(1 - k/m) for k of m bits set.
    if (bits == 0) return 0;
    constexpr double m = kRefusedFilterBits;
    if (bits >= kRefusedFilterBits) return static_cast<uint64_t>(m * std::log(m));  // saturated
    return static_cast<uint64_t>(std::llround(-m * std::log1p(-static_cast<double>(bits) / m)));
}

uint64_t Engine::memory_bytes(const EngineConfig& config) {
    using Index = FixedHashMap<EndpointKey, IndexEntry, EndpointKeyHash>;
    using Parts = FixedHashMap<PartKey, uint32_t, PartKeyHash>;
    using Hosts = FixedHashMap<HostPairKey, PairCount, HostPairKeyHash>;
    using CmRequests = FixedHashMap<CmRequestKey, uint32_t, CmRequestKeyHash>;
    using CmPairs = FixedHashMap<PartKey, PartKey, PartKeyHash>;
    using EventIndex = FixedHashMap<EventKey, uint32_t, EventKeyHash>;
    const uint32_t n = std::max<uint32_t>(config.max_endpoints, 1);
    const bool grow = config.grow_tables;
    const uint64_t wheel = config.idle_timeout_ns != 0 ? kWheelBytesPerEndpoint : 0;
    return uint64_t{n} * (sizeof(Endpoint) + sizeof(uint32_t) + wheel) +
           Index::memory_bytes_for(n, grow) +
           Parts::memory_bytes_for(pool_size(n, kPartsDivisor), grow) +
           Hosts::memory_bytes_for(std::size_t{n} * kHostPairsPerEndpoint, grow) +
           CmRequests::memory_bytes_for(pool_size(n, kCmRequestsDivisor), grow) +
           CmPairs::memory_bytes_for(pool_size(n, kCmRequestsDivisor / 2), grow) +
           MessagePool::memory_bytes_for(std::max(kMinPoolSlots, n * kMessagesPerEndpoint)) +
           SlotPool<OrphanBlock>::memory_bytes_for(pool_size(n, kOrphanBlocksDivisor)) +
           EventIndex::memory_bytes_for(pool_size(n, kEventWindowsDivisor), grow) +
           SlotPool<EventRecord>::memory_bytes_for(pool_size(n, kEventWindowsDivisor)) +
           uint64_t{pool_size(n, kEventWindowsDivisor)} * sizeof(uint32_t) + kRefusedFilterBits / 8;
}

std::unique_ptr<Engine> Engine::create(const EngineConfig& config, RecordSink& sink,
                                       std::string& error) {
    if (config.max_endpoints == 0) {
        error = "max_endpoints must be at least 1";
        return nullptr;
    }
    auto engine = std::make_unique<EngineImpl>(config, sink);
    if (!engine->valid()) {
        error = "cannot allocate state tables for " + std::to_string(config.max_endpoints) +
                " endpoints";
        return nullptr;
    }
    return engine;
}

EngineImpl::EngineImpl(const EngineConfig& config, RecordSink& sink)
    : config_(config),
      sink_(sink),
      capacity_(config.max_endpoints),
      endpoints_(config.max_endpoints),
      free_endpoints_(config.max_endpoints),
      index_(config.max_endpoints, initial_entries(config)),
      parts_(pool_size(config.max_endpoints, kPartsDivisor), initial_entries(config)),
      hosts_(std::size_t{config.max_endpoints} * kHostPairsPerEndpoint, initial_entries(config)),
      cm_requests_(pool_size(config.max_endpoints, kCmRequestsDivisor), initial_entries(config)),
      cm_pairs_(pool_size(config.max_endpoints, kCmRequestsDivisor / 2), initial_entries(config)),
      messages_(std::max(kMinPoolSlots, config.max_endpoints * kMessagesPerEndpoint)),
      orphan_blocks_(pool_size(config.max_endpoints, kOrphanBlocksDivisor)),
      refused_bits_(kRefusedFilterBits / 64),
      wheel_on_(config.idle_timeout_ns != 0),
      wheel_granularity_(std::max<uint64_t>(config.idle_timeout_ns / kWheelSubdivisions, 1)),
      wheel_prev_(wheel_slots(config)),
      wheel_next_(wheel_slots(config)),
      wheel_bucket_(wheel_slots(config)),
      tick_candidates_(wheel_slots(config)),
      event_index_(pool_size(config.max_endpoints, kEventWindowsDivisor), initial_entries(config)),
      event_windows_(pool_size(config.max_endpoints, kEventWindowsDivisor)),
      open_windows_(pool_size(config.max_endpoints, kEventWindowsDivisor)) {
    wheel_heads_.fill(kNoIndex);
    config_.report_sweep_slots = std::max(config_.report_sweep_slots, 1u);  // 0 never ends
}

bool EngineImpl::valid() const {
    return endpoints_.valid() && free_endpoints_.valid() && index_.valid() && parts_.valid() &&
           hosts_.valid() && cm_requests_.valid() && cm_pairs_.valid() && messages_.valid() &&
           orphan_blocks_.valid() && refused_bits_.valid() && wheel_prev_.valid() &&
           wheel_next_.valid() && wheel_bucket_.valid() && tick_candidates_.valid() &&
           event_index_.valid() && event_windows_.valid() && open_windows_.valid();
}

std::size_t EngineImpl::bytes_per_endpoint() const {
    const std::size_t total =
        sizeof(Endpoint) * capacity_ + sizeof(uint32_t) * capacity_ + index_.memory_bytes() +
        parts_.memory_bytes() + hosts_.memory_bytes() + cm_requests_.memory_bytes() +
        cm_pairs_.memory_bytes() + messages_.memory_bytes() + orphan_blocks_.memory_bytes() +
        refused_bits_.memory_bytes() + wheel_prev_.memory_bytes() + wheel_next_.memory_bytes() +
        wheel_bucket_.memory_bytes() + tick_candidates_.memory_bytes() +
        event_index_.memory_bytes() + event_windows_.memory_bytes() + open_windows_.memory_bytes();
    return total / capacity_;
}

// A free slot made into a new part of `key` from `src` whose first packet came at `ts`, or
// kNoIndex when the table is full.
uint32_t EngineImpl::take_slot(const EndpointKey& key, const proto::IpAddress& src,
                               uint64_t ts) noexcept {
    uint32_t idx;
    if (free_count_ > 0)
        idx = free_endpoints_[--free_count_];
    else if (high_water_ < capacity_)
        idx = high_water_++;
    else
        return kNoIndex;
    Endpoint& ep = *new (&endpoints_[idx]) Endpoint{};
    ep.key = key;
    ep.set_source_ip(src);
    ep.live = true;
    ep.incarnation = ++incarnations_;
    ep.report_parity = report_parity_;  // not live at the boundary of a report in progress
    // The first packet's time, set here rather than by a "first packet?" test on every
    // packet; the part is filed in tick()'s wheel at its idle deadline.
    ep.t_first_ns = ts;
    ep.traffic.t_last_ns = ts;
    if (wheel_on_) wheel_file(idx, bucket_of(deadline_of(ep)));
    bump(counters_.endpoints_live);
    // A new part may be the missing half of a pair a CM exchange named ("the pair applies
    // when both endpoints exist"): its partner must try again on its next packet. Without
    // this, the partner retried only after some unrelated change, and when that came
    // depended on the other traffic of the worker - 1 and 2 workers would pair at
    // different packets (e.g. an endpoint first seen by a CNP). The
    // sport/ip rules see a new part only once it is registered (note_source).
    if (cm_pairs_.size() > 0) ++pair_generation_;
    return idx;
}

void EngineImpl::drop_new_slot(uint32_t idx) noexcept {
    if (wheel_on_) wheel_unlink(idx);
    endpoints_[idx].live = false;
    bump(counters_.endpoints_live, -1);
    free_endpoints_[free_count_++] = idx;
}

uint32_t EngineImpl::create_endpoint(const EndpointKey& key, uint64_t hash,
                                     const proto::IpAddress& src, uint64_t ts) noexcept {
    // An earlier packet of the same burst may have created it since the lookahead looked.
    if (const IndexEntry* found = index_.find(key, hash)) return found->endpoint;
    const uint32_t idx = take_slot(key, src, ts);
    if (idx == kNoIndex) return kNoIndex;
    if (!index_.insert(key, hash, IndexEntry{idx, kNoIndex})) {
        drop_new_slot(idx);
        return kNoIndex;
    }
    bump(counters_.endpoints);
    return idx;
}

uint32_t EngineImpl::part_from(uint32_t primary, const proto::IpAddress& src,
                               uint64_t ts) noexcept {
    Endpoint& first = endpoints_[primary];
    const PartKey key{first.key, src};
    if (parts_.size() > 0)
        if (const uint32_t* found = parts_.find(key)) return *found;
    const uint32_t idx = take_slot(first.key, src, ts);
    if (idx == kNoIndex) return kNoIndex;
    if (!parts_.insert(key, idx)) {
        drop_new_slot(idx);
        return kNoIndex;
    }
    Endpoint& ep = endpoints_[idx];
    ep.secondary = true;
    ep.next_part = first.next_part;
    first.next_part = idx;
    return idx;
}

uint32_t EngineImpl::find_part(const EndpointKey& key, const proto::IpAddress& src) noexcept {
    const IndexEntry* found = index_.find(key);
    if (!found) return kNoIndex;  // an endpoint without its index part has no parts
    if (endpoints_[found->endpoint].same_source_ip(src)) return found->endpoint;
    if (parts_.size() == 0) return kNoIndex;
    const uint32_t* part = parts_.find(PartKey{key, src});
    return part ? *part : kNoIndex;
}

void EngineImpl::count_refused(uint64_t hash) noexcept {
    // The index's hash of (ip, qpn), remixed: the filter's bit must not follow the table's
    // slot order.
    const uint32_t bit =
        static_cast<uint32_t>(mix64(hash ^ 0x5851F42D4C957F2Dull) % kRefusedFilterBits);
    uint64_t& word = refused_bits_[bit / 64];
    const uint64_t mask = uint64_t{1} << (bit % 64);
    if (word & mask) return;
    word |= mask;
    bump(counters_.table_full_bits);
}

Endpoint* EngineImpl::peer_of(Endpoint& ep) noexcept {
    if (ep.pair_by == PairBy::none) return nullptr;
    if (ep.peer_index != kNoIndex) {
        Endpoint& p = endpoints_[ep.peer_index];
        if (p.live && p.incarnation == ep.peer_incarnation) return &p;
    }
    // The peer was evicted (and maybe came back): look it up again - the part of the peer
    // endpoint that receives from this part's host.
    ep.peer_index = find_part(EndpointKey{ep.peer_ip, ep.peer_qpn}, ep.key.ip);
    if (ep.peer_index == kNoIndex) return nullptr;
    Endpoint& p = endpoints_[ep.peer_index];
    ep.peer_incarnation = p.incarnation;
    return &p;
}

void EngineImpl::process_one(const ParsedPacket& pkt, uint64_t ts, unsigned k) noexcept {
    bump(counters_.packets);
    const proto::OpcodeInfo& info = pkt.info();
    // The lookahead found existing endpoints; they stay where they are until tick().
    uint32_t idx = ahead_.index[k];
    if (idx == kNoIndex) {
        const EndpointKey key{pkt.dst_ip, pkt.t.bth.dest_qp};
        idx = create_endpoint(key, ahead_.hash[k], pkt.src_ip, ts);
        if (idx == kNoIndex) {
            bump(counters_.table_full);
            count_refused(ahead_.hash[k]);
            return;
        }
    }
    // Another source's packets have their own part (docs/semantics.md "Sources"): they
    // never touch the sequence state, messages or pair of this source's.
    if (!endpoints_[idx].same_source_ip(pkt.src_ip)) [[unlikely]] {
        idx = part_from(idx, pkt.src_ip, ts);
        if (idx == kNoIndex) {
            bump(counters_.table_full);
            return;
        }
    }
    Endpoint& ep = endpoints_[idx];
    TrafficCounters& c = ep.traffic;
    // t_last_ns is the time of the part's latest packet in capture order, not the greatest:
    // a capture out of timestamp order moves it back, and with it the idle deadline tick()'s
    // wheel filed the part at. (The counters' stores are apart, between branches, so that
    // GCC does not pair them into vector instructions: two or three more a packet.)
    ++c.pkts;
    if (ts < c.t_last_ns) [[unlikely]]
        traffic_went_back(idx, ts);
    c.bytes += static_cast<uint64_t>(pkt.payload_len);
    if (pkt.ecn == proto::kEcnCe) ++ep.counters.ecn_ce;
    c.t_last_ns = ts;

    if (info.transport == Transport::cnp) {
        ++ep.counters.cnps;
        count_event(EventKind::cnp, ep, pkt.t.bth.psn, ts);
        return;
    }
    if (ep.transport == TransportFamily::unknown) {
        ep.transport = family_of(info.transport);
        ep.t_transport_ns = ts;
    }
    if (info.transport == Transport::ud) {
        if (pkt.t.bth.dest_qp == 1) handle_cm(pkt);
        return;
    }

    // Nearly always the port it knows, or one it already counted as a second: no call.
    if (!ep.source_noted(pkt.src_port)) note_source(idx, pkt);
    if (!info.request && !ep.got_response) {
        ep.got_response = true;  // it may now complete a sport/ip pair
        pairing_changed(ep);
    }
    if (ep.pair_by == PairBy::none && ep.pair_generation != pairing_version(ep)) try_pair(idx, ts);
    if (info.request)
        handle_request(idx, pkt, ts);
    else
        handle_response(idx, pkt, ts);
}

// Most packets of a long message are its next PSN, in order, with nothing held: what the
// general path below would decide for them (a fresh PSN that opens no gap, owned by the
// newest message, not past a hole) is checked here in a few loads of lines already
// fetched, and the packet is attributed directly. Anything else - a READ before it, a
// hole, a held packet, a message whose range ends earlier - goes the general way. The
// results are the same either way (the ground-truth and determinism tests run both
// paths); this one saves ~10% of a worker's time on line-rate traffic
// (docs/performance.md, "The next packet of a long message").
bool EngineImpl::continue_tail(Endpoint& ep, const ParsedPacket& pkt, uint64_t ts) noexcept {
    const proto::OpcodeInfo& info = pkt.info();
    if (info.position != Position::middle && info.position != Position::last) return false;
    if (info.kind != OpKind::send && info.kind != OpKind::write) return false;
    const uint32_t psn = pkt.t.bth.psn;
    if (ep.window.empty() || psn != proto::psn_add(ep.window.max_psn(), 1)) return false;
    if (ep.last_request_read || ep.has_orphans || ep.msg_tail == kNoIndex) return false;
    OpenMessage& m = messages_[ep.msg_tail];
    const MsgOp op = info.kind == OpKind::send ? MsgOp::send : MsgOp::write;
    if (m.op != op || psn != proto::psn_add(m.psn_run, 1) || proto::psn_newer(m.psn_first, psn) ||
        !within(m, psn))
        return false;
    ep.window.observe(psn, ep.window_bits);  // the run grows: the bits are not touched
    ep.read_last_known = false;
    attribute_packet(m, pkt, ts);
    maybe_complete_unreliable(ep, ep.msg_tail);
    return true;
}

void EngineImpl::handle_request(uint32_t idx, const ParsedPacket& pkt, uint64_t ts) noexcept {
    Endpoint& ep = endpoints_[idx];
    const uint32_t psn = pkt.t.bth.psn;
    if (continue_tail(ep, pkt, ts)) return;
    const bool had = !ep.window.empty();
    const uint32_t prev_max = ep.window.max_psn();
    switch (ep.window.observe(psn, ep.window_bits)) {
        case PsnClass::fresh: {
            if (had) {
                // SPEC 4: a READ at max_psn occupies PSNs up to its last response PSN if a
                // response showed it; otherwise the request after it opens no gap.
                uint32_t expected = proto::psn_add(prev_max, 1);
                bool check = true;
                if (ep.last_request_read) {
                    check = ep.read_last_known;
                    expected = proto::psn_add(ep.read_last_psn, 1);
                }
                if (check && psn != expected && proto::psn_newer(psn, expected)) {
                    const uint32_t missing = proto::psn_sub(psn, expected);
                    ++ep.counters.gaps;
                    ep.counters.missing += missing;
                    count_event(EventKind::gap, ep, psn, ts, missing);
                }
            }
            note_next_request(ep, psn);
            ep.last_request_read = pkt.info().kind == OpKind::read_request;
            ep.read_last_known = false;
            // Read only while last_request_read holds (psn_outstanding): a cold line.
            if (ep.last_request_read) ep.read_dma_len = pkt.t.reth.dma_len;
            apply_request_data(ep, pkt, false, ts);
            break;
        }
        case PsnClass::late:
            ++ep.counters.ooo_pkts;
            apply_request_data(ep, pkt, false, ts);
            break;
        case PsnClass::dup:
            ++ep.counters.dup_pkts;
            apply_request_data(ep, pkt, true, ts);
            break;
    }
}

void EngineImpl::handle_response(uint32_t idx, const ParsedPacket& pkt, uint64_t ts) noexcept {
    Endpoint& ep = endpoints_[idx];
    const proto::OpcodeInfo& info = pkt.info();
    const uint32_t psn = pkt.t.bth.psn;
    bool nak = false;
    uint8_t syndrome = 0;
    if (pkt.t.has(proto::kAeth)) {
        syndrome = pkt.t.aeth.syndrome;
        switch (proto::aeth_class(syndrome)) {
            case proto::AethClass::ack:
                break;
            case proto::AethClass::rnr_nak:
                nak = true;
                ++ep.counters.naks.rnr;
                count_event(EventKind::rnr_nak, ep, psn, ts, 0, syndrome);
                break;
            case proto::AethClass::reserved:
            case proto::AethClass::nak: {
                nak = true;
                const bool reserved = proto::aeth_class(syndrome) == proto::AethClass::reserved;
                const proto::NakCode code =
                    reserved ? proto::NakCode::invalid_request : proto::nak_code(syndrome);
                switch (code) {
                    case proto::NakCode::psn_seq_error:
                        ++ep.counters.naks.seq;
                        break;
                    case proto::NakCode::invalid_request:
                        ++ep.counters.naks.inv;
                        break;
                    case proto::NakCode::remote_access:
                        ++ep.counters.naks.access;
                        break;
                    case proto::NakCode::remote_op:
                        ++ep.counters.naks.op;
                        break;
                }
                count_event(proto::nak_is_fatal(code) ? EventKind::fatal_nak : EventKind::nak, ep,
                            psn, ts, 0, syndrome);
                break;
            }
        }
    }
    Endpoint* peer = peer_of(ep);
    if (!peer && ep.pair_by == PairBy::none && try_pair_by_psn(idx, psn, ts)) peer = peer_of(ep);
    if (peer && report_pending_) [[unlikely]]
        report_before_change(ep.peer_index);  // completions change the peer's record
    if (!peer) {
        if (!ep.reported_unknown) {
            ep.reported_unknown = true;
            count_event(EventKind::unknown_qp, ep, psn, ts);
        }
        return;
    }
    if (nak) {
        complete_acked(*peer, psn, true, ts);
        apply_nak(*peer, psn, syndrome, ts);
        return;
    }
    if (info.kind == OpKind::read_response) apply_read_response(*peer, pkt, ts);
    complete_acked(*peer, psn, false, ts);
}

void EngineImpl::handle_cm(const ParsedPacket& pkt) noexcept {
    if (pkt.payload_len <= 0) return;
    const auto mad =
        parse_cm_mad({pkt.frame + pkt.payload_offset, static_cast<std::size_t>(pkt.payload_len)});
    if (!mad) return;
    if (mad->kind == CmKind::req) {
        if (uint32_t* qpn =
                cm_requests_.insert({pkt.src_ip, pkt.dst_ip, mad->local_comm_id}, mad->local_qpn))
            *qpn = mad->local_qpn;
        return;
    }
    // A REP answers the REQ that its sender received, i.e. one sent by the REP's destination.
    const uint32_t* req_qpn = cm_requests_.find({pkt.dst_ip, pkt.src_ip, mad->remote_comm_id});
    if (!req_qpn) return;
    // The parts that will talk: the requester's from the responder's host, and back.
    const PartKey requester{{pkt.dst_ip, *req_qpn}, pkt.src_ip};
    const PartKey responder{{pkt.src_ip, mad->local_qpn}, pkt.dst_ip};
    if (PartKey* v = cm_pairs_.insert(requester, responder)) *v = responder;
    if (PartKey* v = cm_pairs_.insert(responder, requester)) *v = requester;
    ++pair_generation_;
}

}  // namespace insert::state
