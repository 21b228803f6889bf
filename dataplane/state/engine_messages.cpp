// Message assembly and completion (SPEC.md section 5; docs/semantics.md "Messages").
#include <cstring>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

using proto::OpKind;
using proto::ParsedPacket;
using proto::Position;
using proto::psn_newer;
using proto::psn_sub;

namespace {

// A SEND/WRITE whose last PSN is not known yet: neither its Last/Only nor a RETH length
// bounds it.
bool open_ended(const OpenMessage& m) {
    return !m.last_known && m.length_hint == 0 && (m.op == MsgOp::send || m.op == MsgOp::write);
}

}  // namespace

// A packet past a hole in a message of unknown end: the hole may hold this message's Last
// and the First of the next, so the packet may belong to either (docs/semantics.md
// "Messages"). The message's run is first extended over the PSNs the endpoint has
// observed, attributed or not: a packet held and then dropped for want of room was still
// observed, and a hole it leaves is no hole.
bool EngineImpl::past_hole(const Endpoint& ep, OpenMessage& m, uint32_t psn) const noexcept {
    if (!open_ended(m)) return false;
    for (;;) {
        const uint32_t next = proto::psn_add(m.psn_run, 1);
        if (!psn_newer(psn, next)) return false;  // `psn` continues the run
        if (!ep.window.seen(next, ep.window_bits)) return true;
        m.psn_run = next;
    }
}

bool EngineImpl::within(const OpenMessage& m, uint32_t psn) const noexcept {
    if (m.last_known) return !psn_newer(psn, m.psn_last);
    if (m.op == MsgOp::read) return !m.has_next_request || psn_newer(m.next_request_psn, psn);
    if (m.has_next_first && !psn_newer(m.next_first_psn, psn)) return false;
    if (m.length_hint) return psn_sub(psn, m.psn_first) < m.length_hint;
    return true;
}

uint32_t EngineImpl::owner_of(Endpoint& ep, uint32_t psn, bool reads_only) noexcept {
    // The open message with the newest psn_first not newer than `psn` owns it, if its
    // range reaches that far (the list is in PSN order, so the last match wins).
    uint32_t owner = kNoIndex;
    if (ep.msg_tail != kNoIndex && !psn_newer(messages_[ep.msg_tail].psn_first, psn)) {
        owner = ep.msg_tail;  // the common case: a packet of the newest message
    } else {
        for (uint32_t i = ep.msg_head; i != kNoIndex; i = messages_[i].next) {
            const OpenMessage& m = messages_[i];
            if (psn_newer(m.psn_first, psn)) break;
            owner = i;
        }
    }
    if (owner == kNoIndex) return owner;
    const OpenMessage& m = messages_[owner];
    if (reads_only && m.op != MsgOp::read) return kNoIndex;
    return within(m, psn) ? owner : kNoIndex;
}

uint32_t EngineImpl::create_message(Endpoint& ep, const ParsedPacket& pkt, uint64_t ts) noexcept {
    const uint32_t psn = pkt.t.bth.psn;
    if (ep.msg_count >= Endpoint::kMaxOpenMessages) {
        bump(counters_.msgs_overflow);
        const OpenMessage& oldest = messages_[ep.msg_head];
        freeze(ep, ep.msg_head, oldest.nak_status, false, 0);
    }
    uint32_t m = messages_.acquire();
    if (m == kNoIndex && ep.msg_head != kNoIndex) {
        bump(counters_.msgs_overflow);
        freeze(ep, ep.msg_head, messages_[ep.msg_head].nak_status, false, 0);
        m = messages_.acquire();
    }
    if (m == kNoIndex) {
        bump(counters_.msgs_overflow);
        return m;
    }
    OpenMessage& msg = messages_[m];
    msg.psn_first = psn;
    msg.psn_newest = psn;
    msg.psn_run = psn;
    msg.t_first_ns = ts;
    msg.t_last_ns = ts;
    // Where the opening packet came from, read from its headers here only (once a message;
    // they are in cache: it was just parsed), so that no other packet pays for it.
    std::memcpy(msg.origin.src_mac.data(), pkt.frame + proto::kEthSrcMacOffset, proto::kMacLen);
    msg.origin.ttl =
        pkt.frame[pkt.l3_offset + (pkt.ipv6 ? proto::kIpv6HopLimitOffset : proto::kIpv4TtlOffset)];
    msg.port = pkt.port;
    // Insert in PSN order: at the tail (the common case, decided on the tail alone) unless
    // a late First arrives after newer messages. Each neighbour bounds the other's range.
    if (ep.msg_tail == kNoIndex || psn_newer(psn, messages_[ep.msg_tail].psn_first)) {
        msg.next = kNoIndex;
        if (ep.msg_tail == kNoIndex) {
            ep.msg_head = m;
        } else {
            messages_[ep.msg_tail].next = m;
            bound_by_next_first(messages_[ep.msg_tail], psn);
        }
        ep.msg_tail = m;
        ++ep.msg_count;
        return m;
    }
    uint32_t prev = kNoIndex;
    uint32_t cur = ep.msg_head;
    while (cur != kNoIndex && psn_newer(psn, messages_[cur].psn_first)) {
        prev = cur;
        cur = messages_[cur].next;
    }
    msg.next = cur;
    if (cur != kNoIndex) bound_by_next_first(msg, messages_[cur].psn_first);
    if (prev == kNoIndex) {
        ep.msg_head = m;
    } else {
        messages_[prev].next = m;
        bound_by_next_first(messages_[prev], psn);
    }
    if (cur == kNoIndex) ep.msg_tail = m;
    ++ep.msg_count;
    return m;
}

void EngineImpl::bound_by_next_first(OpenMessage& m, uint32_t next_first) noexcept {
    if (!m.has_next_first || psn_newer(m.next_first_psn, next_first)) {
        m.has_next_first = true;
        m.next_first_psn = next_first;
    }
}

void EngineImpl::attribute_packet(OpenMessage& m, const ParsedPacket& pkt, uint64_t ts) noexcept {
    const proto::OpcodeInfo& info = pkt.info();
    ++m.pkts;
    m.bytes += static_cast<uint64_t>(pkt.payload_len);
    m.t_first_ns = std::min(m.t_first_ns, ts);
    m.t_last_ns = std::max(m.t_last_ns, ts);
    if (psn_newer(pkt.t.bth.psn, m.psn_newest)) m.psn_newest = pkt.t.bth.psn;
    if (pkt.t.bth.psn == proto::psn_add(m.psn_run, 1)) m.psn_run = pkt.t.bth.psn;
    if (info.position == Position::last || info.position == Position::only) {
        m.last_known = true;
        m.psn_last = pkt.t.bth.psn;
        m.has_imm = info.has_imm;
        m.imm = pkt.t.imm;
        m.has_inv = info.has_inv;
        m.inv = pkt.t.ieth_rkey;
    }
}

namespace {

// Appends run `b` (which starts right after `a` ends) to run `a`.
void append_run(OrphanRun& a, OrphanRun& b) {
    a.count = static_cast<uint16_t>(a.count + b.count);
    a.payload_len += b.payload_len;
    a.dups += b.dups;
    a.ts_ns = std::min(a.ts_ns, b.ts_ns);
    a.ts_last_ns = std::max(a.ts_last_ns, b.ts_last_ns);
    a.last = b.last;
    a.has_imm = b.has_imm;
    a.has_inv = b.has_inv;
    a.imm_or_inv = b.imm_or_inv;
    b.used = false;
}

void set_single(OrphanRun& r, const ParsedPacket& pkt, MsgOp op, uint64_t ts) {
    const proto::OpcodeInfo& info = pkt.info();
    r.used = true;
    r.ts_ns = ts;
    r.ts_last_ns = ts;
    r.dups = 0;
    r.psn = pkt.t.bth.psn;
    r.count = 1;
    r.payload_len = static_cast<uint32_t>(pkt.payload_len);
    r.op = op;
    r.last = info.position == Position::last;
    r.has_imm = info.has_imm;
    r.has_inv = info.has_inv;
    r.imm_or_inv = info.has_imm ? pkt.t.imm : pkt.t.ieth_rkey;
}

}  // namespace

// The packet (`one`, a run of itself) continues a held run (right after its end, unless that
// end is a Last, or right before its start, unless the packet is a Last): it joins the run,
// and two runs it makes adjacent become one. False if no run is adjacent.
bool EngineImpl::extend_run(OrphanBlock& block, OrphanRun one) noexcept {
    const uint32_t psn = one.psn;
    for (OrphanRun& r : block.slots) {
        if (!r.used || r.op != one.op || r.count >= PsnBits::kSize) continue;
        if (!r.last && psn == proto::psn_add(r.end(), 1)) {
            append_run(r, one);
        } else if (!one.last && proto::psn_add(psn, 1) == r.psn) {
            append_run(one, r);
            r = one;
            r.used = true;
        } else {
            continue;
        }
        for (OrphanRun& a : block.slots)
            for (OrphanRun& b : block.slots)
                if (&a != &b && a.used && b.used && a.op == b.op && !a.last &&
                    proto::psn_add(a.end(), 1) == b.psn && a.count + b.count <= PsnBits::kSize)
                    append_run(a, b);
        return true;
    }
    return false;
}

// Holds a packet until its message can claim it, in a run with its neighbours if there is
// one. Without a free slot (OrphanBlock::kSlots runs per endpoint) a run that an open
// message's range reaches makes room by joining that message (where it most likely belongs:
// a long message with a hole early on). Such a run is held past a hole of that message whether it
// was held for that reason or, arriving before the message's First, waited for it and then stayed:
// the way it came to be held does not matter (else a sprayed SEND's tail, Last included, waiting
// for its First is what gets replaced: tests/integration ground_truth, stress_impairments:3019).
// Failing that, the oldest run is replaced and its packets counted in orphans_dropped. A packet to
// be held past a hole itself (`past_hole`) is never held at that price: false, and the caller
// attributes it.
bool EngineImpl::add_orphan(Endpoint& ep, const ParsedPacket& pkt, MsgOp op, uint64_t ts,
                            bool past_hole) noexcept {
    if (!ep.has_orphans) {
        ep.set_orphans(orphan_blocks_.acquire());
        if (!ep.has_orphans) {
            if (!past_hole) bump(counters_.orphans_dropped);
            return false;
        }
    }
    OrphanBlock& block = orphan_blocks_[ep.orphans];
    OrphanRun one;
    set_single(one, pkt, op, ts);
    if (extend_run(block, one)) return true;
    int slot = -1;
    for (int i = 0; i < OrphanBlock::kSlots && slot < 0; ++i)
        if (!block.slots[i].used) slot = i;
    if (slot < 0 && past_hole) return false;
    for (int i = 0; i < OrphanBlock::kSlots && slot < 0; ++i) {
        OrphanRun& o = block.slots[i];
        const uint32_t owner = owner_of(ep, o.psn, false);
        if (owner == kNoIndex || messages_[owner].op != o.op) continue;
        if (held_last_before(ep, messages_[owner], o.psn)) continue;
        join_orphan(messages_[owner], o);
        slot = i;
    }
    if (slot < 0) {
        slot = block.next_victim;
        block.next_victim = static_cast<uint8_t>((block.next_victim + 1) % OrphanBlock::kSlots);
        bump(counters_.orphans_dropped, block.slots[slot].count);
    }
    block.slots[slot] = one;
    return true;
}

// Whether a held Last lies after the First of message `m` and before `psn`.
bool EngineImpl::held_last_before(const Endpoint& ep, const OpenMessage& m,
                                  uint32_t psn) const noexcept {
    if (!ep.has_orphans) return false;
    for (const OrphanRun& o : orphan_blocks_[ep.orphans].slots)
        if (o.used && o.last && psn_newer(o.end(), m.psn_first) && psn_newer(psn, o.end()))
            return true;
    return false;
}

// A held run joins message `m` (and leaves its slot).
void EngineImpl::join_orphan(OpenMessage& m, OrphanRun& o) noexcept {
    o.used = false;
    const uint32_t end = o.end();
    m.pkts += o.count;
    m.retx_pkts += o.dups;
    m.bytes += o.payload_len;
    m.t_first_ns = std::min(m.t_first_ns, o.ts_ns);
    m.t_last_ns = std::max(m.t_last_ns, o.ts_last_ns);
    if (psn_newer(end, m.psn_newest)) m.psn_newest = end;
    if (o.psn == proto::psn_add(m.psn_run, 1)) m.psn_run = end;
    if (o.last) {
        m.last_known = true;
        m.psn_last = end;
        m.has_imm = o.has_imm;
        m.has_inv = o.has_inv;
        m.imm = o.has_imm ? o.imm_or_inv : 0;
        m.inv = o.has_inv ? o.imm_or_inv : 0;
    }
}

// A duplicate of a held packet counts with it (and joins its message with it).
bool EngineImpl::count_orphan_dup(Endpoint& ep, uint32_t psn, uint64_t ts) noexcept {
    if (!ep.has_orphans) return false;  // without touching the cold line
    for (OrphanRun& o : orphan_blocks_[ep.orphans].slots)
        if (o.used && proto::psn_sub(psn, o.psn) < o.count) {
            ++o.dups;
            o.ts_last_ns = std::max(o.ts_last_ns, ts);
            return true;
        }
    return false;
}

void EngineImpl::release_orphans_if_empty(Endpoint& ep) noexcept {
    if (!ep.has_orphans) return;
    for (const OrphanRun& o : orphan_blocks_[ep.orphans].slots)
        if (o.used) return;
    orphan_blocks_.release(ep.orphans);
    ep.set_orphans(kNoIndex);
}

// Held packets that are now known to be message `mi`'s join it: those its range covers,
// and, while its end is unknown, those its run of PSNs has reached (a packet beyond a hole
// stays held: the hole may hold this message's Last and the next one's First). At the
// freeze of a message whose end is still unknown, everything its range may cover joins
// it: nothing will tell more, and its psn_last is then the newest PSN observed.
void EngineImpl::absorb_orphans(Endpoint& ep, uint32_t mi, bool at_freeze) noexcept {
    if (!ep.has_orphans) return;  // without touching the cold line
    OrphanRun* orphans = orphan_blocks_[ep.orphans].slots;
    OpenMessage& m = messages_[mi];
    const bool bounded_by_next = m.next != kNoIndex;
    const uint32_t next_first = bounded_by_next ? messages_[m.next].psn_first : 0;
    // Take matching orphans in PSN order; a Last among them ends the message.
    for (;;) {
        int best = -1;
        for (int i = 0; i < OrphanBlock::kSlots; ++i) {
            const OrphanRun& o = orphans[i];
            if (!o.used || o.op != m.op || !psn_newer(o.psn, m.psn_first)) continue;
            if (bounded_by_next && !psn_newer(next_first, o.end())) continue;
            if (!within(m, o.end())) continue;
            if (!at_freeze && past_hole(ep, m, o.psn)) continue;
            if (best < 0 || psn_newer(orphans[best].psn, o.psn)) best = i;
        }
        if (best < 0) {
            release_orphans_if_empty(ep);
            return;
        }
        join_orphan(m, orphans[best]);
    }
}

namespace {
// What a NAK does to a message it hits: counts, and the status it leaves.
// Returns true for a fatal NAK (the message freezes).
bool hit_by_nak(OpenMessage& m, uint8_t syndrome, MsgStatus& fatal_status) {
    switch (proto::aeth_class(syndrome)) {
        case proto::AethClass::ack:
            return false;
        case proto::AethClass::rnr_nak:
            ++m.rnr_naks;
            m.nak_status = MsgStatus::nak_rnr;
            return false;
        case proto::AethClass::reserved:
            ++m.naks;
            fatal_status = MsgStatus::nak_inv;
            return true;
        case proto::AethClass::nak:
            break;
    }
    ++m.naks;
    switch (proto::nak_code(syndrome)) {
        case proto::NakCode::psn_seq_error:
            m.nak_status = MsgStatus::nak_seq;
            return false;
        case proto::NakCode::invalid_request:
            fatal_status = MsgStatus::nak_inv;
            return true;
        case proto::NakCode::remote_access:
            fatal_status = MsgStatus::nak_access;
            return true;
        case proto::NakCode::remote_op:
            fatal_status = MsgStatus::nak_op;
            return true;
    }
    return false;
}
}  // namespace

bool EngineImpl::absorb_pending_naks(Endpoint& ep, uint32_t mi) noexcept {
    if (!ep.has_pending) return false;  // without touching the cold line
    // The used slots in slot order (the order they were examined in before the mask).
    for (unsigned used = ep.pending_mask; used != 0; used &= used - 1) {
        const unsigned i = static_cast<unsigned>(__builtin_ctz(used));
        const uint8_t bit = static_cast<uint8_t>(1u << i);
        const PendingNak p = ep.pending[i];
        OpenMessage& m = messages_[mi];
        const bool bounded = m.last_known || m.length_hint != 0;
        if (p.psn() != m.psn_first &&
            !(bounded && psn_newer(p.psn(), m.psn_first) && within(m, p.psn())))
            continue;
        ep.set_pending_mask(static_cast<uint8_t>(ep.pending_mask & ~bit));
        MsgStatus fatal = MsgStatus::incomplete;
        if (hit_by_nak(m, p.syndrome(), fatal)) {
            freeze(ep, mi, fatal, false, 0);
            return true;
        }
    }
    return false;
}

void EngineImpl::note_next_request(Endpoint& ep, uint32_t psn) noexcept {
    if (ep.msg_tail == kNoIndex) return;
    OpenMessage& tail = messages_[ep.msg_tail];
    if (tail.op == MsgOp::read && !tail.last_known && !tail.has_next_request &&
        psn_newer(psn, tail.psn_first)) {
        tail.has_next_request = true;
        tail.next_request_psn = psn;
    }
}

void EngineImpl::apply_request_data(Endpoint& ep, const ParsedPacket& pkt, bool dup,
                                    uint64_t ts) noexcept {
    const proto::OpcodeInfo& info = pkt.info();
    const uint32_t psn = pkt.t.bth.psn;
    if (dup) {
        // A duplicate of a packet still held (waiting for its First, or past a hole): it
        // joins the message with it.
        if (count_orphan_dup(ep, psn, ts)) return;
        // A retransmission: it counts in the message only while the message is open.
        const uint32_t m = owner_of(ep, psn, false);
        if (m != kNoIndex) {
            ++messages_[m].retx_pkts;
            messages_[m].t_last_ns = std::max(messages_[m].t_last_ns, ts);
        }
        return;
    }
    switch (info.kind) {
        case OpKind::send:
        case OpKind::write: {
            const MsgOp op = info.kind == OpKind::send ? MsgOp::send : MsgOp::write;
            if (info.position == Position::middle || info.position == Position::last) {
                const uint32_t m = owner_of(ep, psn, false);
                if (m == kNoIndex || messages_[m].op != op) {
                    add_orphan(ep, pkt, op, ts);
                    return;
                }
                // Past a hole in a message of unknown end (reordering, a loss before the
                // observer), the packet is held until the hole fills or a First in it
                // claims the packet. With no slot free it joins the message at once, as
                // it most likely belongs there (a long message with a hole early on).
                if (past_hole(ep, messages_[m], psn)) {
                    // Past a held Last the packet is certainly not this message's: that
                    // Last ends this message or a later one.
                    if (held_last_before(ep, messages_[m], psn)) {
                        add_orphan(ep, pkt, op, ts);
                        return;
                    }
                    if (add_orphan(ep, pkt, op, ts, true)) return;
                }
                attribute_packet(messages_[m], pkt, ts);
                absorb_orphans(ep, m);  // the run may now reach packets held past it
                maybe_complete_unreliable(ep, m);
                return;
            }
            const uint32_t m = create_message(ep, pkt, ts);
            if (m == kNoIndex) return;
            OpenMessage& msg = messages_[m];
            msg.op = op;
            msg.unreliable = info.transport == proto::Transport::uc;
            if (pkt.t.has(proto::kReth)) {
                msg.has_va = msg.has_dma_len = true;
                msg.va = pkt.t.reth.va;
                msg.rkey = pkt.t.reth.rkey;
                msg.dma_len = pkt.t.reth.dma_len;
                // First packets are full path-MTU packets, so RETH length / first payload
                // gives the message's packet count: it bounds which later packets join it.
                if (info.position == Position::first && pkt.payload_len > 0)
                    msg.length_hint = (msg.dma_len + static_cast<uint32_t>(pkt.payload_len) - 1) /
                                      static_cast<uint32_t>(pkt.payload_len);
            }
            attribute_packet(msg, pkt, ts);
            absorb_orphans(ep, m);
            if (!absorb_pending_naks(ep, m)) maybe_complete_unreliable(ep, m);
            return;
        }
        case OpKind::read_request: {
            const uint32_t owner = owner_of(ep, psn, true);
            if (owner != kNoIndex && psn != messages_[owner].psn_first) {
                const OpenMessage& r = messages_[owner];
                // A READ re-issued for the rest of an earlier READ whose responses were lost:
                // it belongs to that READ (its PSN lies inside responses already shown).
                if (r.last_known || psn_sub(psn, r.psn_first) < r.read_top) {
                    messages_[owner].t_last_ns = std::max(r.t_last_ns, ts);
                    return;
                }
            }
            const uint32_t m = create_message(ep, pkt, ts);
            if (m == kNoIndex) return;
            OpenMessage& msg = messages_[m];
            msg.op = MsgOp::read;
            msg.has_va = msg.has_dma_len = true;
            msg.va = pkt.t.reth.va;
            msg.rkey = pkt.t.reth.rkey;
            msg.dma_len = pkt.t.reth.dma_len;
            absorb_pending_naks(ep, m);
            return;
        }
        case OpKind::cmp_swap:
        case OpKind::fetch_add: {
            const uint32_t m = create_message(ep, pkt, ts);
            if (m == kNoIndex) return;
            OpenMessage& msg = messages_[m];
            msg.op = info.kind == OpKind::cmp_swap ? MsgOp::cmp_swap : MsgOp::fetch_add;
            msg.has_va = true;
            msg.va = pkt.t.atomic.va;
            msg.rkey = pkt.t.atomic.rkey;
            msg.pkts = 1;
            msg.bytes = static_cast<uint64_t>(pkt.payload_len);
            msg.last_known = true;
            msg.psn_last = psn;
            absorb_pending_naks(ep, m);
            return;
        }
        default:
            return;
    }
}

void EngineImpl::apply_read_response(Endpoint& f, const ParsedPacket& pkt, uint64_t ts) noexcept {
    const uint32_t psn = pkt.t.bth.psn;
    const uint32_t mi = owner_of(f, psn, true);
    if (mi == kNoIndex) return;
    OpenMessage& m = messages_[mi];
    // Distinct response PSNs: bit i of read_seen stands for offset read_top - 1 - i.
    const uint32_t off = psn_sub(psn, m.psn_first);
    bool first_time = false;
    if (off >= m.read_top) {
        const uint32_t shift = off + 1 - m.read_top;
        m.read_seen = (shift >= 64 ? 0 : (m.read_seen << shift)) | 1u;
        m.read_top = off + 1;
        first_time = true;
    } else {
        const uint32_t bit = m.read_top - 1 - off;
        if (bit < 64 && !((m.read_seen >> bit) & 1)) {
            m.read_seen |= uint64_t{1} << bit;
            first_time = true;
        }
    }
    if (first_time) {
        ++m.pkts;
        m.bytes += static_cast<uint64_t>(pkt.payload_len);
    }
    m.t_last_ns = std::max(m.t_last_ns, ts);
    const Position pos = pkt.info().position;
    if (pos == Position::last || pos == Position::only) {
        m.last_known = true;
        m.psn_last = psn;
        if (f.last_request_read && f.window.max_psn() == m.psn_first) {
            f.read_last_known = true;
            f.read_last_psn = psn;
        }
        freeze(f, mi, MsgStatus::ok, true, ts);
    }
}

void EngineImpl::complete_acked(Endpoint& f, uint32_t psn, bool nak, uint64_t ts) noexcept {
    for (uint32_t i = f.msg_head; i != kNoIndex;) {
        const OpenMessage& m = messages_[i];
        const uint32_t next = m.next;
        // Messages starting after the response's PSN cannot end at or before it.
        if (psn_newer(m.psn_first, psn)) break;
        if (m.op != MsgOp::read && !m.unreliable && m.last_known) {
            // ACK-class: PSN not older than psn_last; NAK: PSN newer than psn_last.
            const bool covered = nak ? psn_newer(psn, m.psn_last) : !psn_newer(m.psn_last, psn);
            if (covered) freeze(f, i, MsgStatus::ok, true, ts);
        }
        i = next;
    }
}

void EngineImpl::apply_nak(Endpoint& f, uint32_t psn, uint8_t syndrome, uint64_t ts) noexcept {
    (void)ts;
    const uint32_t mi = owner_of(f, psn, false);
    if (mi == kNoIndex) {
        // Not observed yet (a lost First/Only is NAKed before it is seen): keep it, in
        // place of the oldest when all slots are used.
        const unsigned slot = f.pending_next;
        f.pending_next = static_cast<uint8_t>((f.pending_next + 1) % Endpoint::kPendingNaks);
        f.pending[slot] = PendingNak(psn, syndrome);
        f.set_pending_mask(static_cast<uint8_t>(f.pending_mask | 1u << slot));
        return;
    }
    MsgStatus fatal = MsgStatus::incomplete;
    if (hit_by_nak(messages_[mi], syndrome, fatal)) freeze(f, mi, fatal, false, 0);
}

}  // namespace insert::state
