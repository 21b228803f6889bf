#include <algorithm>
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
// Entries a growing hash table starts with room for (EngineConfig::grow_tables).
constexpr std::size_t kInitialTableEntries = 4096;

uint32_t pool_size(uint32_t endpoints, uint32_t divisor) {
    return std::max(kMinPoolSlots, endpoints / divisor);
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
      hosts_(std::size_t{config.max_endpoints} * kHostPairsPerEndpoint, initial_entries(config)),
      cm_requests_(pool_size(config.max_endpoints, kCmRequestsDivisor), initial_entries(config)),
      cm_pairs_(pool_size(config.max_endpoints, kCmRequestsDivisor / 2), initial_entries(config)),
      messages_(std::max(kMinPoolSlots, config.max_endpoints * kMessagesPerEndpoint)),
      orphan_blocks_(pool_size(config.max_endpoints, kOrphanBlocksDivisor)) {}

bool EngineImpl::valid() const {
    return endpoints_.valid() && free_endpoints_.valid() && index_.valid() && hosts_.valid() &&
           cm_requests_.valid() && cm_pairs_.valid() && messages_.valid() && orphan_blocks_.valid();
}

std::size_t EngineImpl::bytes_per_endpoint() const {
    const std::size_t total = sizeof(Endpoint) * capacity_ + sizeof(uint32_t) * capacity_ +
                              index_.memory_bytes() + hosts_.memory_bytes() +
                              cm_requests_.memory_bytes() + cm_pairs_.memory_bytes() +
                              messages_.memory_bytes() + orphan_blocks_.memory_bytes();
    return total / capacity_;
}

uint32_t EngineImpl::create_endpoint(const EndpointKey& key, uint64_t hash) noexcept {
    // An earlier packet of the same burst may have created it since the lookahead looked.
    if (const IndexEntry* found = index_.find(key, hash)) return found->endpoint;
    uint32_t idx;
    if (free_count_ > 0)
        idx = free_endpoints_[--free_count_];
    else if (high_water_ < capacity_)
        idx = high_water_++;
    else
        return kNoIndex;
    if (!index_.insert(key, hash, IndexEntry{idx, kNoIndex})) {
        free_endpoints_[free_count_++] = idx;
        return kNoIndex;
    }
    Endpoint& ep = *new (&endpoints_[idx]) Endpoint{};
    ep.key = key;
    ep.live = true;
    ep.incarnation = ++incarnations_;
    bump(counters_.endpoints);
    bump(counters_.endpoints_live);
    // A new endpoint may be the missing half of a pair a CM exchange named ("the pair applies
    // when both endpoints exist"): its partner must try again on its next packet. Without
    // this, the partner retried only after some unrelated change, and when that came
    // depended on the other traffic of the worker - 1 and 2 workers paired at different
    // packets (insert-gen stress_pairing seed 7010, an endpoint first seen by a CNP). The
    // sport/ip rules see a new endpoint only once it has a source (note_source).
    if (cm_pairs_.size() > 0) ++pair_generation_;
    return idx;
}

Endpoint* EngineImpl::peer_of(Endpoint& ep) noexcept {
    if (ep.pair_by == PairBy::none) return nullptr;
    if (ep.peer_index != kNoIndex) {
        Endpoint& p = endpoints_[ep.peer_index];
        if (p.live && p.incarnation == ep.peer_incarnation) return &p;
    }
    // The peer was evicted (and maybe came back): look it up again.
    const IndexEntry* found = index_.find(EndpointKey{ep.peer_ip, ep.peer_qpn});
    ep.peer_index = found ? found->endpoint : kNoIndex;
    if (!found) return nullptr;
    Endpoint& p = endpoints_[found->endpoint];
    ep.peer_incarnation = p.incarnation;
    return &p;
}

void EngineImpl::process_one(const ParsedPacket& pkt, uint64_t ts, unsigned k) noexcept {
    bump(counters_.packets);
    const proto::OpcodeInfo& info = pkt.info();
    // The lookahead found existing endpoints; they stay where they are until tick().
    uint32_t idx = ahead_.index[k];
    if (idx == kNoIndex)
        idx = create_endpoint(EndpointKey{pkt.dst_ip, pkt.t.bth.dest_qp}, ahead_.hash[k]);
    if (idx == kNoIndex) {
        bump(counters_.table_full);
        return;
    }
    Endpoint& ep = endpoints_[idx];
    TrafficCounters& c = ep.traffic;
    if (c.pkts == 0) ep.t_first_ns = ts;
    ++c.pkts;
    c.bytes += static_cast<uint64_t>(pkt.payload_len);
    c.t_last_ns = ts;
    if (pkt.ecn == proto::kEcnCe) ++ep.counters.ecn_ce;

    if (info.transport == Transport::cnp) {
        ++ep.counters.cnps;
        emit_event(EventKind::cnp, ep, pkt.t.bth.psn, ts);
        return;
    }
    if (ep.transport == TransportFamily::unknown) ep.transport = family_of(info.transport);
    if (info.transport == Transport::ud) {
        if (pkt.t.bth.dest_qp == 1) handle_cm(pkt);
        return;
    }

    // Nearly always the source it knows, or one it already counted as a second: no call.
    if (!ep.source_noted(pkt.src_ip, pkt.src_port)) note_source(idx, pkt);
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
// (docs/performance.md, session 8).
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
                    emit_event(EventKind::gap, ep, psn, ts, missing);
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
                emit_event(EventKind::rnr_nak, ep, psn, ts, 0, syndrome);
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
                emit_event(proto::nak_is_fatal(code) ? EventKind::fatal_nak : EventKind::nak, ep,
                           psn, ts, 0, syndrome);
                break;
            }
        }
    }
    Endpoint* peer = peer_of(ep);
    if (!peer && ep.pair_by == PairBy::none && try_pair_by_psn(idx, psn, ts)) peer = peer_of(ep);
    if (!peer) {
        if (!ep.reported_unknown) {
            ep.reported_unknown = true;
            emit_event(EventKind::unknown_qp, ep, psn, ts);
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
        if (uint32_t* qpn = cm_requests_.insert({pkt.src_ip, mad->local_comm_id}, mad->local_qpn))
            *qpn = mad->local_qpn;
        return;
    }
    // A REP answers the REQ that its sender received, i.e. one sent by the REP's destination.
    const uint32_t* req_qpn = cm_requests_.find({pkt.dst_ip, mad->remote_comm_id});
    if (!req_qpn) return;
    const EndpointKey requester{pkt.dst_ip, *req_qpn};
    const EndpointKey responder{pkt.src_ip, mad->local_qpn};
    if (EndpointKey* v = cm_pairs_.insert(requester, responder)) *v = responder;
    if (EndpointKey* v = cm_pairs_.insert(responder, requester)) *v = requester;
    ++pair_generation_;
}

}  // namespace insert::state
