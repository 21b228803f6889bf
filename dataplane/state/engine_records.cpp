// Records, periodic reports, idle eviction and the end of input.
#include "dataplane/state/engine_impl.hpp"

namespace insert::state {

void EngineImpl::push(const Record& r) noexcept {
    if (!sink_.push(r)) bump(counters_.records_dropped);
}

void EngineImpl::emit_event(EventKind kind, const Endpoint& ep, uint32_t psn, uint64_t ts,
                            uint32_t extra, uint8_t syndrome) noexcept {
    Record r;
    r.type = RecordType::event;
    r.event = EventRecord{};
    r.event.kind = kind;
    r.event.ip = ep.key.ip;
    r.event.qpn = ep.key.qpn;
    r.event.psn = psn;
    r.event.t_ns = ts;
    r.event.missing = extra;
    r.event.syndrome = syndrome;
    push(r);
}

void EngineImpl::freeze(Endpoint& ep, uint32_t mi, MsgStatus status, bool acked,
                        uint64_t t_ack) noexcept {
    // Packets held past a hole of this message, if its end is still unknown, are counted
    // in it (the newest observed PSN is its psn_last then).
    if (ep.has_orphans && !messages_[mi].last_known) absorb_orphans(ep, mi, true);
    OpenMessage& m = messages_[mi];
    // Copied from a constant: `Record r;` zeroes it with `rep stos` (slow to start for
    // 232 bytes); a copy of a constant, most of it overwritten below, is a few stores.
    static constexpr Record kMsgRecord{};
    Record r = kMsgRecord;
    r.type = RecordType::msg;
    MsgRecord& out = r.msg;
    const bool paired = ep.pair_by != PairBy::none;
    out.src_ip = paired ? ep.peer_ip : ep.src_ip;
    out.dst_ip = ep.key.ip;
    out.dst_qpn = ep.key.qpn;
    out.has_src_qpn = paired;
    out.src_qpn = ep.peer_qpn;
    out.op = m.op;
    out.psn_first = m.psn_first;
    if (m.last_known)
        out.psn_last = m.psn_last;
    else if (m.op == MsgOp::read)
        out.psn_last = m.has_next_request ? proto::psn_sub(m.next_request_psn, 1)
                       : m.read_top       ? proto::psn_add(m.psn_first, m.read_top - 1)
                                          : m.psn_first;
    else
        out.psn_last = m.psn_newest;
    out.pkts = m.pkts;
    out.bytes = m.bytes;
    out.has_va = m.has_va;
    out.va = m.va;
    out.rkey = m.rkey;
    out.has_dma_len = m.has_dma_len;
    out.dma_len = m.dma_len;
    out.has_imm = m.has_imm;
    out.imm = m.imm;
    out.has_inv = m.has_inv;
    out.inv = m.inv;
    out.t_first_ns = m.t_first_ns;
    out.t_last_ns = m.t_last_ns;
    out.has_ack = acked;
    out.t_ack_ns = t_ack;
    out.retx_pkts = m.retx_pkts;
    out.naks = m.naks;
    out.rnr_naks = m.rnr_naks;
    out.status = status;

    // Unlink from the endpoint's list and return the slot.
    uint32_t prev = kNoIndex;
    for (uint32_t i = ep.msg_head; i != mi; i = messages_[i].next) prev = i;
    if (prev == kNoIndex)
        ep.msg_head = m.next;
    else
        messages_[prev].next = m.next;
    if (ep.msg_tail == mi) ep.msg_tail = prev;
    --ep.msg_count;
    messages_.release(mi);

    ep.count_msg(out.op);
    bump(counters_.msgs);
    push(r);
}

void EngineImpl::freeze_open(Endpoint& ep, bool timeout, uint64_t now) noexcept {
    while (ep.msg_head != kNoIndex) {
        const OpenMessage& m = messages_[ep.msg_head];
        if (timeout) emit_event(EventKind::timeout, ep, m.psn_first, now);
        freeze(ep, ep.msg_head, m.nak_status, false, 0);
    }
}

void EngineImpl::emit_qp(const Endpoint& ep, bool final, bool evicted) noexcept {
    Record r;
    r.type = RecordType::qp;
    r.qp = QpRecord{};
    QpRecord& q = r.qp;
    const EndpointCounters& c = ep.counters;
    q.pkts = ep.traffic.pkts;
    q.bytes = ep.traffic.bytes;
    for (int i = 0; i < 5; ++i) q.msgs[i] = ep.msgs(i);
    q.dup_pkts = c.dup_pkts;
    q.ooo_pkts = c.ooo_pkts;
    q.gaps = c.gaps;
    q.missing = c.missing;
    q.naks = c.naks;
    q.cnps = c.cnps;
    q.ecn_ce = c.ecn_ce;
    q.t_first_ns = ep.t_first_ns;
    q.t_last_ns = ep.traffic.t_last_ns;
    q.ip = ep.key.ip;
    q.qpn = ep.key.qpn;
    q.pair_by = ep.pair_by;
    q.peer_ip = ep.peer_ip;
    q.peer_qpn = ep.peer_qpn;
    q.transport = ep.transport;
    q.final = final;
    q.evicted = evicted;
    push(r);
}

void EngineImpl::report(uint64_t) {
    for (uint32_t i = 0; i < high_water_; ++i)
        if (endpoints_[i].live) emit_qp(endpoints_[i], false);
}

void EngineImpl::finish(uint64_t end_ns) {
    for (uint32_t i = 0; i < high_water_; ++i) {
        Endpoint& ep = endpoints_[i];
        if (!ep.live) continue;
        freeze_open(ep, false, end_ns);
        emit_qp(ep, true);
    }
}

void EngineImpl::evict(uint32_t idx) noexcept {
    Endpoint& ep = endpoints_[idx];
    freeze_open(ep, true, ep.traffic.t_last_ns);
    emit_qp(ep, true, true);
    forget_source(ep);
    if (ep.has_orphans) orphan_blocks_.release(ep.orphans);
    ep.set_orphans(kNoIndex);
    index_.erase(ep.key);
    ep.live = false;
    free_endpoints_[free_count_++] = idx;
    bump(counters_.endpoints_live, -1);
    bump(counters_.evicted);
}

void EngineImpl::tick(uint64_t now_ns) noexcept {
    // Every endpoint idle longer than the timeout at `now` goes, whatever else shares this
    // worker: eviction times then depend on capture time only, so any worker count gives
    // the same records (SPEC invariant 1). Callers tick at a coarse period (replay: every
    // timeout/8 of capture time), which bounds the cost of the full scan.
    if (config_.idle_timeout_ns == 0) return;
    for (uint32_t i = 0; i < high_water_; ++i) {
        const Endpoint& ep = endpoints_[i];
        if (ep.live && now_ns > ep.traffic.t_last_ns &&
            now_ns - ep.traffic.t_last_ns > config_.idle_timeout_ns)
            evict(i);
    }
}

}  // namespace insert::state
