// process_burst: the packet path with its memory accesses started ahead of time.
//
// With 100k+ endpoints a packet's state is never in cache, and each line it needs costs a
// miss of ~150-200 ns on these machines: far more than the work. The lines form a chain
// (the index slot names the endpoint, the endpoint names its newest message and its peer,
// the peer names its oldest message), so they are fetched in stages, each a couple of
// packets after the previous one, while earlier packets are processed:
//   stage_index          hash the key, prefetch the index slot
//   stage_endpoint       look the endpoint up (slot now cached), prefetch the lines of it
//                        the packet will touch (Endpoint's layout names them)
//   stage_messages       request: the newest open message, or the pool slot a new message
//                        will take; response: the peer's lines
//   stage_peer_messages  response: the peer's oldest open message (what an ACK completes)
//   process_one          the work, on cached lines
// Prefetches are hints: a stale one (the state changed under an earlier packet of the
// burst) costs a wasted line, never a wrong result. The only result carried from a stage
// to process_one is the index of an endpoint that exists, and existing endpoints do not
// move or go away inside process_burst (only tick() and finish() remove them).
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

namespace {

// Packets between consecutive stages: one stage's misses are covered by the work of this
// many packets (BM_EngineTable picks it; see docs/performance.md).
constexpr unsigned kStageDistance = 2;
constexpr unsigned kStages = 4;  // stages before process_one
constexpr unsigned kLag = kStages * kStageDistance;

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
    const uint32_t* found = index_.find(key_of(pkt), ahead_.hash[k]);
    ahead_.index[k] = found ? *found : kNoIndex;
    if (!found) return;
    const Endpoint& ep = endpoints_[*found];
    prefetch_range(&ep, 128);  // lines 0 and 1
    if (pkt.info().request) prefetch_line(ep.window.word_of(pkt.t.bth.psn));
}

void EngineImpl::stage_messages(const proto::ParsedPacket& pkt, unsigned k) noexcept {
    const uint32_t idx = ahead_.index[k];
    if (idx == kNoIndex) return;  // a new endpoint: its first packet pays its misses
    const Endpoint& ep = endpoints_[idx];
    const proto::OpcodeInfo& info = pkt.info();
    if (info.request) {
        // The packets between this one and its processing open messages first.
        if (opens_message(pkt)) messages_.prefetch_next(ahead_.opening++);
        // Middle/Last packets join the newest message; a First is linked after it.
        if (ep.msg_tail != kNoIndex) messages_.prefetch_slot(ep.msg_tail);
        return;
    }
    if (ep.peer_index == kNoIndex) return;
    const Endpoint& peer = endpoints_[ep.peer_index];
    prefetch_line(&peer);
    prefetch_line(&peer.peer_ip);  // line 4: what freezing the peer's message reads
}

void EngineImpl::stage_peer_messages(const proto::ParsedPacket& pkt, unsigned k) noexcept {
    const uint32_t idx = ahead_.index[k];
    if (idx == kNoIndex || pkt.info().request) return;
    const uint32_t peer = endpoints_[idx].peer_index;
    if (peer == kNoIndex) return;
    const uint32_t head = endpoints_[peer].msg_head;
    if (head != kNoIndex) messages_.prefetch_slot(head);
}

void EngineImpl::process_burst(const proto::ParsedPacket* pkts, const uint64_t* ts,
                               unsigned n) noexcept {
    static_assert(kLag < kRing && (kRing & (kRing - 1)) == 0);
    // Step i starts stage s for packet i - s * distance and processes packet i - kLag.
    for (unsigned i = 0; i < n + kLag; ++i) {
        if (i < n) stage_index(pkts[i], i % kRing);
        if (unsigned j = i - 1 * kStageDistance; i >= 1 * kStageDistance && j < n)
            stage_endpoint(pkts[j], j % kRing);
        if (unsigned j = i - 2 * kStageDistance; i >= 2 * kStageDistance && j < n)
            stage_messages(pkts[j], j % kRing);
        if (unsigned j = i - 3 * kStageDistance; i >= 3 * kStageDistance && j < n)
            stage_peer_messages(pkts[j], j % kRing);
        if (unsigned j = i - kLag; i >= kLag && j < n) {
            if (opens_message(pkts[j]) && ahead_.index[j % kRing] != kNoIndex) --ahead_.opening;
            process_one(pkts[j], ts[j], j % kRing);
        }
    }
}

}  // namespace insert::state
