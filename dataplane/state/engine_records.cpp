// Records, periodic reports, idle eviction and the end of input.
#include <algorithm>

#include "dataplane/state/engine_impl.hpp"
#include "dataplane/state/event_window.hpp"
#include "dataplane/state/qp_merge.hpp"

namespace insert::state {

void EngineImpl::push(const Record& r) noexcept {
    if (!sink_.push(r)) bump(counters_.records_dropped);
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
    out.src_ip = ep.src_ip;  // the part's source: its peer's IP when paired
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
    out.origin = m.origin;
    out.port = m.port;

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
    // A timeout's window is that of the moment its part had been idle longer than the
    // timeout (its deadline), which does not depend on when a worker's tick came.
    const uint32_t window = timeout ? event_window(deadline_of(ep)) : 0;
    while (ep.msg_head != kNoIndex) {
        const OpenMessage& m = messages_[ep.msg_head];
        if (timeout) count_event_in(window, EventKind::timeout, ep, m.psn_first, now, 0, 0);
        freeze(ep, ep.msg_head, m.nak_status, false, 0);
    }
}

void EngineImpl::fill_qp(const Endpoint& ep, bool final, bool evicted, QpRecord& q) noexcept {
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
    q.t_transport_ns = ep.t_transport_ns;
    q.src_ip = ep.src_ip;
    q.final = final;
    q.evicted = evicted;
    q.endpoint_gone = evicted && !ep.secondary && ep.next_part == kNoIndex;
}

void EngineImpl::emit_qp(const Endpoint& ep, bool final, bool evicted) noexcept {
    Record r;
    r.type = RecordType::qp;
    r.qp = QpRecord{};
    fill_qp(ep, final, evicted, r.qp);
    push(r);
}

void EngineImpl::emit_endpoint_qp(uint32_t primary, bool final) noexcept {
    Record r;
    r.type = RecordType::qp;
    r.qp = QpRecord{};
    fill_qp(endpoints_[primary], final, false, r.qp);
    for (uint32_t p = endpoints_[primary].next_part; p != kNoIndex; p = endpoints_[p].next_part) {
        QpRecord part;
        fill_qp(endpoints_[p], final, false, part);
        merge_qp(r.qp, part);
    }
    push(r);
}

// The periodic report is a snapshot of every live endpoint at report_now_, taken lazily:
// report() only flips the parity that marks a part as reported, and each endpoint is
// reported either just before the first change to it (a packet to any of its parts, a
// response completing its messages, pairing, eviction: every caller of freeze() and
// make_pair() and tick()'s actions go through report_before_change) or by the sweep, which
// finds it unchanged. Its record is thus what a scan at report_now_ would have written,
// and it precedes every msg record of the endpoint completed after the boundary (the
// exporter's latency book counts those in the next report, not this one).
void EngineImpl::report(uint64_t now_ns) {
    sweep_report(UINT32_MAX);  // the previous one, if a quick succession left it unfinished
    report_parity_ = !report_parity_;
    report_now_ = now_ns;
    report_cursor_ = 0;
    report_pending_ = high_water_ > 0;
}

bool EngineImpl::advance_report() noexcept {
    if (report_pending_) sweep_report(config_.report_sweep_slots);
    return report_pending_;
}

void EngineImpl::sweep_report(uint32_t slots) noexcept {
    if (!report_pending_) return;
    const uint32_t end =
        high_water_ - report_cursor_ > slots ? report_cursor_ + slots : high_water_;
    for (; report_cursor_ < end; ++report_cursor_) {
        const Endpoint& ep = endpoints_[report_cursor_];
        if (ep.live && !ep.secondary && ep.report_parity != report_parity_)
            report_endpoint(report_cursor_);
    }
    // Slots past the cursor taken since report() hold parts created after it: marked.
    if (report_cursor_ >= high_water_) report_pending_ = false;
}

void EngineImpl::report_before_change(uint32_t idx) noexcept {
    const Endpoint& ep = endpoints_[idx];
    if (ep.report_parity == report_parity_) return;
    // A part other than the index's finds its endpoint's index part through the index
    // (unlink_part keeps it pointing at a live part while any part lives).
    uint32_t primary = idx;
    if (ep.secondary)
        if (const IndexEntry* entry = index_.find(ep.key)) primary = entry->endpoint;
    report_endpoint(primary);
}

void EngineImpl::report_endpoint(uint32_t primary) noexcept {
    for (uint32_t p = primary; p != kNoIndex; p = endpoints_[p].next_part)
        endpoints_[p].report_parity = report_parity_;
    emit_endpoint_qp(primary, false);
}

void EngineImpl::finish(uint64_t end_ns) {
    sweep_report(UINT32_MAX);
    // Every part's messages before its endpoint's qp record (the exporter's latency book
    // reads them first): an endpoint is finished, all its parts, at its index part.
    for (uint32_t i = 0; i < high_water_; ++i) {
        Endpoint& first = endpoints_[i];
        if (!first.live || first.secondary) continue;
        for (uint32_t p = i; p != kNoIndex; p = endpoints_[p].next_part)
            freeze_open(endpoints_[p], false, end_ns);
        emit_endpoint_qp(i, true);
    }
    closed_events_ = closed_timeouts_ = UINT32_MAX;  // every window is over
    flush_windows();
}

// Takes a part out of its endpoint's chain and the table that finds it. An index part with
// other parts hands the index entry to the next one.
void EngineImpl::unlink_part(uint32_t idx) noexcept {
    Endpoint& ep = endpoints_[idx];
    if (ep.secondary) {
        parts_.erase(PartKey{ep.key, ep.src_ip});
        IndexEntry* entry = index_.find(ep.key);
        for (uint32_t* link = entry ? &endpoints_[entry->endpoint].next_part : nullptr;
             link && *link != kNoIndex; link = &endpoints_[*link].next_part)
            if (*link == idx) {
                *link = ep.next_part;
                break;
            }
        return;
    }
    if (ep.next_part == kNoIndex) {
        index_.erase(ep.key);
        return;
    }
    const uint32_t heir = ep.next_part;
    Endpoint& h = endpoints_[heir];
    parts_.erase(PartKey{h.key, h.src_ip});
    h.secondary = false;
    if (IndexEntry* entry = index_.find(ep.key)) *entry = IndexEntry{heir, h.peer_index};
}

// Called by tick() only, for a part it has already taken out of the wheel (a candidate).
void EngineImpl::evict(uint32_t idx) noexcept {
    Endpoint& ep = endpoints_[idx];
    freeze_open(ep, true, ep.traffic.t_last_ns);
    emit_qp(ep, true, true);
    forget_source(ep);
    if (ep.has_orphans) orphan_blocks_.release(ep.orphans);
    ep.set_orphans(kNoIndex);
    unlink_part(idx);
    ep.live = false;
    free_endpoints_[free_count_++] = idx;
    bump(counters_.endpoints_live, -1);
    bump(counters_.evicted);
}

// The deadline wheel. tick(now) must act on exactly the live parts the rule below names
// (the full scan it replaces), in ascending slot order:
//   idle:       now > t_last && now - t_last > timeout  -> evict
// i.e. on every part whose deadline (deadline_of: t_last + timeout + 1) is <= now. (Until
// the event windows became per destination endpoint, a part's CNP window was a deadline
// too.) A part is filed at a bucket no later than its deadline's, which stays true because
// every change that makes a deadline earlier refiles the part: a new part is filed at
// creation (take_slot); its t_last only moves back through a packet older than the last
// one (traffic_went_back). Newer packets make the deadline later, and the part is then
// found early, checked and refiled at its true deadline. Buckets are
// absolute, deadline / granularity rounded up, so that a tick at a multiple of the
// granularity (the workers tick at multiples of timeout/8) finds every entry of its
// bucket due: bucket b holds deadlines in ((b-1)G, bG]. (Rounded down, the tick at bG
// would find its bucket's deadlines all ahead and walk every entry again at the next.)
uint64_t EngineImpl::deadline_of(const Endpoint& ep) const noexcept {
    const uint64_t t_last = ep.traffic.t_last_ns;
    const uint64_t timeout = config_.idle_timeout_ns;
    // Past UINT64_MAX nothing is ever idle: the last time is a bound no later than never.
    return t_last < UINT64_MAX - timeout ? t_last + timeout + 1 : UINT64_MAX;
}

uint64_t EngineImpl::bucket_of(uint64_t deadline) const noexcept {
    return deadline / wheel_granularity_ + (deadline % wheel_granularity_ != 0);
}

// Buckets before the cursor have been processed: a part due there goes into the cursor's
// bucket, which every tick processes.
void EngineImpl::wheel_file(uint32_t idx, uint64_t bucket) noexcept {
    bucket = std::max(bucket, wheel_cursor_);
    uint32_t& head = wheel_heads_[bucket % kWheelBuckets];
    wheel_bucket_[idx] = bucket;
    wheel_prev_[idx] = kNoIndex;
    wheel_next_[idx] = head;
    if (head != kNoIndex) wheel_prev_[head] = idx;
    head = idx;
}

void EngineImpl::wheel_unlink(uint32_t idx) noexcept {
    const uint32_t prev = wheel_prev_[idx];
    const uint32_t next = wheel_next_[idx];
    if (prev == kNoIndex)
        wheel_heads_[wheel_bucket_[idx] % kWheelBuckets] = next;
    else
        wheel_next_[prev] = next;
    if (next != kNoIndex) wheel_prev_[next] = prev;
}

void EngineImpl::wheel_earlier(uint32_t idx, uint64_t bucket) noexcept {
    if (bucket >= wheel_bucket_[idx]) return;
    wheel_unlink(idx);
    wheel_file(idx, bucket);
}

void EngineImpl::traffic_went_back(uint32_t idx, uint64_t ts) noexcept {
    if (!wheel_on_) return;
    const uint64_t timeout = config_.idle_timeout_ns;
    wheel_earlier(idx, bucket_of(ts < UINT64_MAX - timeout ? ts + timeout + 1 : UINT64_MAX));
}

void EngineImpl::tick(uint64_t now_ns) noexcept {
    // Every endpoint idle longer than the timeout at `now` goes, whatever else shares this
    // worker: eviction times then depend on capture time only, so any worker count gives
    // the same records (SPEC invariant 1). The wheel finds the parts whose deadline came
    // (above); the records are those of a scan of every slot in ascending order.
    if (!wheel_on_) return;
    // The buckets up to now's, and the cursor's again: it holds the parts filed since the
    // last tick at deadlines it had passed, and those of its deadlines still ahead then.
    // A `now` behind the cursor (time went back) processes the cursor's bucket only: every
    // later bucket's deadlines are past the previous tick's `now`, so past this one.
    const uint64_t hi = std::max(wheel_cursor_, bucket_of(now_ns));
    const uint64_t buckets = std::min<uint64_t>(hi - wheel_cursor_, kWheelBuckets - 1) + 1;
    // Refiled parts go at hi or later: into no bucket walked already (hi's is walked last;
    // one refiled there before may be looked at twice, never taken twice: it is not due).
    wheel_cursor_ = hi;
    uint32_t candidates = 0;
    uint64_t examined = 0;
    const uint64_t timeout = config_.idle_timeout_ns;
    for (uint64_t b = hi - (buckets - 1), left = buckets; left > 0; ++b, --left) {
        // Detached before the walk: what is refiled into it is not walked again.
        uint32_t i = wheel_heads_[b % kWheelBuckets];
        wheel_heads_[b % kWheelBuckets] = kNoIndex;
        while (i != kNoIndex) {
            const uint32_t next = wheel_next_[i];
            if (wheel_bucket_[i] > hi) {
                wheel_file(i, wheel_bucket_[i]);  // a later round's
            } else {
                ++examined;
                const Endpoint& ep = endpoints_[i];
                const bool idle =
                    now_ns > ep.traffic.t_last_ns && now_ns - ep.traffic.t_last_ns > timeout;
                if (idle)
                    tick_candidates_[candidates++] = i;
                else
                    wheel_file(i, bucket_of(deadline_of(ep)));  // traffic moved it on
            }
            i = next;
        }
    }
    bump(counters_.tick_examined, static_cast<int64_t>(examined));
    // Evicting one part changes no other part's deadline (an eviction touches its
    // endpoint's chain and the pairing tables, not other parts' times), so the candidates
    // are what the scan would find, and in slot order they are what it did.
    std::sort(tick_candidates_.get(), tick_candidates_.get() + candidates);
    for (uint32_t k = 0; k < candidates; ++k) {
        const uint32_t idx = tick_candidates_[k];
        if (report_pending_) report_before_change(idx);
        evict(idx);
    }
    // Every part idle past the timeout at `now` is gone, with its `timeout` events: the
    // timeout windows that ended by `now` are complete.
    if (event_window(now_ns) > closed_timeouts_) {
        closed_timeouts_ = event_window(now_ns);
        flush_windows();
    }
}

}  // namespace insert::state
