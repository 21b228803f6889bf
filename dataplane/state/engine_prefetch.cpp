// process_burst: the packet path with its memory accesses started ahead of time.
//
// With 100k+ endpoints a packet's state is never in cache, and each line it needs costs a
// miss of ~150-200 ns on these machines (more when other cores load the memory): far more
// than the work. The lines form a chain (the index slot names the endpoint and a hint of
// its peer, the endpoint names its newest message, the peer its oldest), so they are
// fetched in stages, each stage run over the whole group of packets (a worker's burst)
// before the next, then the work:
//   stage_index     hash the key, prefetch the index slot
//   stage_endpoint  look the endpoint up (slot now cached), prefetch its hot line; a
//                   response also the lines of its peer (the slot's hint), whose
//                   messages it completes (Endpoint's layout says which packets need
//                   which line)
//   stage_messages  request: the window's bits if this PSN needs them, the newest open
//                   message (its first line unless a Last) or the pool slot a new
//                   message will take; response: the
//                   peer's oldest open message (what an ACK completes); a new endpoint:
//                   the pairing tables' entries it will look up; one not paired yet:
//                   line 4, which says whether it tries again (rarely: docs/state.md)
//   process_one     the work, on cached lines
// A stage reads what the previous stage fetched a whole group's work earlier, and the
// group's misses are all in flight at once. (Running the stages two packets apart, as
// before, read each line ~100 ns after asking for it: too soon.)
// Prefetches are hints: a stale one (the state changed under an earlier packet of the
// group) costs a wasted line, never a wrong result. The only result carried from a stage
// to process_one is the index of an endpoint that exists, and existing endpoints do not
// move or go away inside process_burst (only tick() and finish() remove them).
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

namespace {

inline void prefetch_line(const void* p) {
    __builtin_prefetch(p);
}

EndpointKey key_of(const proto::ParsedPacket& pkt) {
    return EndpointKey{pkt.dst_ip, pkt.t.bth.dest_qp};
}

// A request that starts a message: it will take a slot from the message pool.
bool opens_message(const proto::ParsedPacket& pkt) {
    const proto::OpcodeInfo& info = pkt.info();
    return info.request &&
           (info.position == proto::Position::first || info.position == proto::Position::only);
}

}  // namespace

void EngineImpl::stage_index(const proto::ParsedPacket& pkt, unsigned k) noexcept {
    const uint64_t h = index_.hash(key_of(pkt));
    ahead_.hash[k] = h;
    index_.prefetch(h);
}

void EngineImpl::stage_endpoint(const proto::ParsedPacket& pkt, unsigned k) noexcept {
    const IndexEntry* found = index_.find(key_of(pkt), ahead_.hash[k]);
    ahead_.index[k] = found ? found->endpoint : kNoIndex;
    ahead_.peer_hint[k] = kNoIndex;
    if (!found) return;
    const Endpoint& ep = endpoints_[found->endpoint];
    prefetch_line(&ep);  // line 0
    const proto::OpcodeInfo& info = pkt.info();
    // A READ request records its length on line 4.
    if (info.kind == proto::OpKind::read_request) prefetch_line(&ep.src_ip);
    // A response completes its peer's messages: the peer's lines 0 and 1, named by the
    // index's hint (the endpoint's own peer_index is not cached yet).
    if (!info.request && found->peer_hint != kNoIndex) {
        ahead_.peer_hint[k] = found->peer_hint;
        prefetch_range(&endpoints_[found->peer_hint], 128);
    }
}

void EngineImpl::prefetch_pairing(const proto::ParsedPacket& pkt) noexcept {
    // The entries note_source() and try_pair() look up for the part of the packet's source.
    const proto::Transport t = pkt.info().transport;
    if (t == proto::Transport::ud || t == proto::Transport::cnp) return;  // never paired
    cm_pairs_.prefetch(cm_pairs_.hash(PartKey{key_of(pkt), pkt.src_ip}));
    const uint32_t port = kPortKeyFlag | pkt.src_port;
    hosts_.prefetch(hosts_.hash({pkt.dst_ip, pkt.src_ip, port}));
    hosts_.prefetch(hosts_.hash({pkt.src_ip, pkt.dst_ip, port}));
    hosts_.prefetch(hosts_.hash({pkt.dst_ip, pkt.src_ip, 0}));
    hosts_.prefetch(hosts_.hash({pkt.src_ip, pkt.dst_ip, 0}));
}

void EngineImpl::stage_messages(const proto::ParsedPacket& pkt, unsigned k) noexcept {
    const uint32_t idx = ahead_.index[k];
    if (idx == kNoIndex) {
        // A new endpoint: it will be counted in the host-pair table and try to pair.
        prefetch_pairing(pkt);
        return;
    }
    const Endpoint& ep = endpoints_[idx];
    if (ep.pair_by == PairBy::none && !ep.pairing_excluded) {
        // Not paired yet: line 4 says whether it tries again. It rarely does (only after a
        // change in its host pair), so the pairing tables are left to the attempt itself.
        prefetch_line(&ep.src_ip);
    }
    const proto::OpcodeInfo& info = pkt.info();
    if (info.request) {
        if (ep.window.needs_bits(pkt.t.bth.psn))
            prefetch_line(ep.window_bits.word_of(pkt.t.bth.psn));
        // The packets of the group before this one open messages first.
        if (opens_message(pkt)) messages_.prefetch_next(ahead_.opening++);
        // Middle/Last packets join the newest message; a First or Only is linked after it.
        // All of them use its first line only (OpenMessage's layout), but a Last, which also
        // writes the second (immediate data, invalidate key).
        if (ep.msg_tail != kNoIndex) {
            if (info.position == proto::Position::last)
                messages_.prefetch_slot(ep.msg_tail);
            else
                messages_.prefetch_first_line(ep.msg_tail);
        }
        return;
    }
    if (ep.peer_index == kNoIndex) return;
    const Endpoint& peer = endpoints_[ep.peer_index];
    if (ep.peer_index != ahead_.peer_hint[k]) {
        // No hint (or a stale one): the peer's lines were not asked for yet.
        prefetch_range(&peer, 128);
        return;
    }
    // The peer's oldest open message: what an ACK completes.
    if (peer.msg_head != kNoIndex) messages_.prefetch_slot(peer.msg_head);
}

void EngineImpl::process_burst(const proto::ParsedPacket* pkts, const uint64_t* ts,
                               unsigned n) noexcept {
    for (unsigned base = 0; base < n; base += kGroup) {
        const unsigned m = n - base < kGroup ? n - base : kGroup;
        const proto::ParsedPacket* p = pkts + base;
        for (unsigned k = 0; k < m; ++k) stage_index(p[k], k);
        for (unsigned k = 0; k < m; ++k) stage_endpoint(p[k], k);
        ahead_.opening = 0;
        for (unsigned k = 0; k < m; ++k) stage_messages(p[k], k);
        // A periodic report in progress: the group's endpoints are reported before their
        // packets change them (here, once a group rather than a test a packet; endpoints
        // the group creates did not exist at the boundary).
        if (report_pending_) [[unlikely]]
            for (unsigned k = 0; k < m; ++k)
                if (ahead_.index[k] != kNoIndex) report_before_change(ahead_.index[k]);
        for (unsigned k = 0; k < m; ++k) process_one(p[k], ts[base + k], k);
    }
    if (report_pending_) [[unlikely]]
        sweep_report(config_.report_sweep_slots);
}

}  // namespace insert::state
