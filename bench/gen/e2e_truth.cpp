#include "bench/gen/e2e_truth.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "bench/gen/host_trace_json.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::gen {

namespace {

// docs/correlation.md section 4: "up to 64 items ahead on either side".
constexpr uint32_t kResyncWindow = 64;

OpType family(WrOpcode op) {
    switch (op) {
        case WrOpcode::send:
        case WrOpcode::send_with_imm:
        case WrOpcode::send_with_inv:
            return OpType::send;
        case WrOpcode::rdma_write:
        case WrOpcode::rdma_write_with_imm:
            return OpType::write;
        case WrOpcode::rdma_read:
            return OpType::read;
        case WrOpcode::atomic_cmp_and_swp:
            return OpType::cmp_swap;
        case WrOpcode::atomic_fetch_and_add:
            break;
    }
    return OpType::fetch_add;
}

// floor(x / 2) for negative x too (section 5: "the same formula" when lo > hi).
int64_t floor_half(int64_t x) {
    return x >= 0 ? x / 2 : -((-x + 1) / 2);
}

uint64_t addr_key(uint16_t ip, uint32_t qpn) {
    return (uint64_t{ip} << 32) | qpn;
}
uint64_t peer_key(uint16_t ip, uint16_t peer_ip, uint32_t qpn) {
    return (uint64_t{ip} << 48) | (uint64_t{peer_ip} << 32) | qpn;
}

struct AliveKey {
    uint16_t host;
    uint32_t pid;
    uint64_t obj;  // `qp` object, or a QPN
    bool operator==(const AliveKey&) const = default;
};
struct AliveHash {
    std::size_t operator()(const AliveKey& k) const {
        return std::hash<uint64_t>()(k.obj * 0x9E3779B97F4A7C15ull ^ (uint64_t{k.host} << 32) ^
                                     k.pid);
    }
};

// Nearest-rank percentile (SPEC 7's definition, exact here): the value of rank
// ceil(p/100 * n) in ascending order, found by selection (no full sort).
int64_t nearest_rank(std::vector<int64_t>& v, unsigned percent) {
    const std::size_t rank = std::max<std::size_t>((v.size() * percent + 99) / 100, 1);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
    return v[rank - 1];
}

Percentiles percentiles(std::vector<int64_t> v) {
    Percentiles p;
    if (v.empty()) return p;  // section 6: null when there are none
    p.max = *std::max_element(v.begin(), v.end());
    p.p50 = nearest_rank(v, 50);
    p.p99 = nearest_rank(v, 99);
    return p;
}

// The alignment of docs/correlation.md section 4 over two sequences of `nw` and `nm` items;
// `agree(i, j)` says whether item i of the first and j of the second agree. Calls
// `match(i, j, resync)` for each matched pair, in order.
template <typename Agree, typename Match>
void align(std::size_t nw, std::size_t nm, Agree agree, Match match) {
    std::size_t i = 0, j = 0;
    bool skipped = false;
    while (i < nw && j < nm) {
        // 1. W[i] and M[j] agree: they match, `exact` unless the previous step skipped.
        if (agree(i, j)) {
            match(i, j, skipped);
            skipped = false;
            ++i, ++j;
            continue;
        }
        // 2. The next agreeing pair (W[i+a], M[j+b]), 0 <= a, b <= 64, smallest a + b, then
        // smallest b, then smallest a; what lies before it is skipped.
        bool found = false;
        for (uint32_t sum = 1; sum <= 2 * kResyncWindow && !found; ++sum) {
            for (uint32_t b = 0; b <= std::min(sum, kResyncWindow); ++b) {
                const uint32_t a = sum - b;
                if (a > kResyncWindow || i + a >= nw || j + b >= nm) continue;
                if (!agree(i + a, j + b)) continue;
                match(i + a, j + b, true);
                i += a + 1, j += b + 1;
                found = true;
                break;
            }
        }
        if (found) {
            skipped = false;
            continue;
        }
        // None: W[i] is unmatched, M[j] wire-only; go on from (i+1, j+1).
        ++i, ++j;
        skipped = true;
    }
    // 3. When one side ends, the rest of the other is unmatched.
}

}  // namespace

// One pass of the join (section 3-4) under given clock offsets.
struct E2eTruth::Join {
    std::vector<std::optional<uint32_t>> req, resp;  // per message: its incarnations
    Grouped<uint32_t> m;                             // M per requester incarnation
    struct Match {
        uint32_t inc, w, msg;
        bool resync;
    };
    std::vector<Match> matches;
    std::vector<uint64_t> unmatched_wr;  // per incarnation
    std::vector<MsgJoin> per_msg;        // matched / wire-only after a match, by message
    bool used_time = false;              // a choice among several candidates was made
    uint64_t wire_only = 0, src_untraced = 0, src_host_untraced = 0, pair_conflicts = 0;
};

E2eTruth::E2eTruth(const Scenario& sc, const HostTrace& trace, std::span<const TruthMsg> msgs,
                   const TruthObserver& truth)
    : sc_(sc), trace_(trace), all_msgs_(msgs), truth_(truth) {
    read_trace();
    dedup_msgs();
    complete_wrs();
    // Section 3 "Time": a first pass with offsets 0 (no --clock-offset given), then again
    // with the offsets it estimated; the second pass's matches give the offsets reported
    // and used for every time in the records (reading, section 5).
    const std::vector<int64_t> zero(sc_.hosts.size(), 0);
    Join first = join(zero);
    const std::vector<int64_t> theta1 = estimate(first, nullptr);
    // Only a choice among several incarnations depends on the offsets: without one, the
    // second pass is the first.
    const Join final_join = first.used_time ? join(theta1) : std::move(first);
    const std::vector<int64_t> theta = estimate(final_join, &clocks_);
    theta_ = theta;
    msg_join_ = final_join.per_msg;
    for (uint32_t k = 0; k < msgs_.size(); ++k) {
        msg_join_[k].req = final_join.req[k];
        msg_join_[k].resp = final_join.resp[k];
    }
    match_receives(final_join, theta);
    build_records(final_join, theta);
    build_apps(theta);
    build_pairs(theta);
    check(final_join);
}

// Section 2: QP incarnations, their IPs and peers, and the work requests and completions
// of each, from the host records in canonical order (the trace lists each host's records
// by its clock, and a process's records have distinct times).
void E2eTruth::read_trace() {
    std::unordered_map<AliveKey, uint32_t, AliveHash> by_qp, by_qpn;
    std::map<std::pair<uint16_t, uint32_t>, std::vector<uint32_t>> created_by_process;
    traced_ip_.assign(sc_.hosts.size(), false);
    auto end_life = [&](uint32_t i, int64_t t) {
        Incarnation& q = incs_[i];
        q.t_end = t;
        by_qp.erase({q.host, q.pid, q.qp});
        by_qpn.erase({q.host, q.pid, q.qpn});
    };
    auto fill_ip = [&](uint32_t i, const HostRecord& r) {
        // Its IP: create_qp's, else the first non-null of a later modify/post record.
        if (!incs_[i].ip) incs_[i].ip = trace_.ip_of(r);
    };
    // Room for what the records hold, so that nothing grows record by record.
    std::size_t creates = 0, posts = 0, polls = 0;
    for (const HostRecord& r : trace_.records()) {
        creates += r.kind == HostRec::create_qp;
        posts += r.kind == HostRec::post_send;
        polls += r.kind == HostRec::poll_send || r.kind == HostRec::poll_recv;
    }
    incs_.reserve(creates);
    by_qp.reserve(creates);
    by_qpn.reserve(creates);
    wrs_.reserve(posts);
    sends_.reserve(polls);
    const std::span<const HostRecord> records = trace_.records();
    constexpr std::size_t kAhead = 8;
    for (std::size_t n = 0; n < records.size(); ++n) {
        if (n + kAhead < records.size()) trace_.prefetch(records[n + kAhead]);
        const HostRecord& r = records[n];
        if (r.kind == HostRec::lost) summary_.trace_drops += r.ref;  // ringbuf_drops
        if (r.kind == HostRec::trace_start || r.kind == HostRec::lost) continue;
        if (r.kind != HostRec::process_exit)
            if (const std::optional<uint16_t> ip = trace_.ip_of(r)) traced_ip_[*ip] = true;
        const uint32_t pid = trace_.pid(r.proc);
        switch (r.kind) {
            case HostRec::create_qp: {
                // A successful create_qp of an RC/UC QP starts an incarnation.
                const HostQp& q = trace_.qp(r.ref);
                Incarnation inc;
                inc.host = r.host;
                inc.pid = pid;
                inc.proc = r.proc;
                inc.qp = q.ptr;
                inc.qpn = q.qpn;
                inc.ip = trace_.ip_of(r);
                inc.t_create = r.wall_ns;
                inc.pd = trace_.pd(r.proc);
                const auto i = static_cast<uint32_t>(incs_.size());
                incs_.push_back(inc);
                by_qp[{r.host, pid, q.ptr}] = i;
                by_qpn[{r.host, pid, q.qpn}] = i;
                created_by_process[{r.host, pid}].push_back(i);
                break;
            }
            case HostRec::modify_init:
            case HostRec::modify_rtr:
            case HostRec::modify_rts: {
                const HostQp& q = trace_.qp(r.ref);
                const auto it = by_qp.find({r.host, pid, q.ptr});
                if (it == by_qp.end()) break;
                Incarnation& inc = incs_[it->second];
                fill_ip(it->second, r);
                // Its peer: the latest RTR's peer_ip and dest_qpn (and rq_psn); the latest
                // RTS's sq_psn.
                if (r.kind == HostRec::modify_init) {
                    // qp_access as insert-trace prints it (host_trace_json.cpp).
                    inc.qp_access = q.uc ? kAccessLocalWrite | kAccessRemoteWrite
                                         : kAccessLocalWrite | kAccessRemoteWrite |
                                               kAccessRemoteRead | kAccessRemoteAtomic;
                } else if (r.kind == HostRec::modify_rtr) {
                    inc.peer_ip = q.peer_host;
                    inc.dest_qpn = q.dest_qpn;
                    inc.rq_psn = q.rq_psn;
                } else if (r.kind == HostRec::modify_rts) {
                    inc.sq_psn = q.sq_psn;
                }
                break;
            }
            case HostRec::post_send: {
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                const auto it = by_qp.find({r.host, pid, q.ptr});
                if (it == by_qp.end()) break;
                fill_ip(it->second, r);
                // Section 4 W: post_send records of an RC/UC family, in canonical order.
                const WorkRequest w = trace_.work_request(r);
                Wr wr;
                wr.wall = r.wall_ns;
                wr.wr_id = w.wr_id;
                wr.fam = family(w.opcode);
                wr.len = w.len;
                wr.remote_addr = w.remote_addr;
                wr.rkey = w.rkey;
                wr.signaled = w.signaled;
                wr.uid = r.ref;
                wrs_.add(it->second, wr);
                break;
            }
            case HostRec::post_recv: {
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                const auto it = by_qp.find({r.host, pid, q.ptr});
                if (it != by_qp.end()) fill_ip(it->second, r);
                break;
            }
            case HostRec::poll_send:
            case HostRec::poll_recv: {
                // Completions of q's process with qpn == q.qpn inside q's lifetime.
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                const auto it = by_qpn.find({r.host, pid, q.qpn});
                if (it == by_qpn.end()) break;
                const Completion c = trace_.completion(r);
                const Comp comp{r.wall_ns, c.wr_id, c.status, c.opcode, c.byte_len};
                const bool recv =
                    c.opcode == WcOpcode::recv || c.opcode == WcOpcode::recv_rdma_with_imm;
                if (!recv)
                    sends_.add(it->second, comp);
                else if (c.status == WcStatus::success)
                    recvs_.add(it->second, comp);
                break;
            }
            case HostRec::destroy_qp: {
                // The incarnation ends at the first later destroy_qp of (host, pid, qp).
                const HostQp& q = trace_.qp(r.ref);
                const auto it = by_qp.find({r.host, pid, q.ptr});
                if (it == by_qp.end()) break;
                end_life(it->second, r.wall_ns);
                break;
            }
            case HostRec::process_exit: {
                // ... or at its process's exit, whichever comes first.
                auto& created = created_by_process[{r.host, pid}];
                for (uint32_t i : created)
                    if (incs_[i].t_end == INT64_MAX) end_life(i, r.wall_ns);
                created.clear();
                break;
            }
            default:  // open_device, query_gid, alloc_pd, create_cq, reg_mr, dereg_mr: ignored
                break;
        }
    }
    wrs_.finish(incs_.size());
    sends_.finish(incs_.size());
    recvs_.finish(incs_.size());
    for (const Incarnation& q : incs_) {
        if (!q.ip) ++summary_.qps_without_ip;  // cannot be joined
        if (!q.ip) continue;
        const auto i = static_cast<uint32_t>(&q - incs_.data());
        by_addr_.add(addr_key(*q.ip, q.qpn), i);
        if (q.peer_ip) {
            by_peer_.add(peer_key(*q.ip, *q.peer_ip, q.dest_qpn), i);
            by_peer_any_.add(addr_key(*q.peer_ip, q.dest_qpn), i);
        }
    }
    by_addr_.finish();
    by_peer_.finish();
    by_peer_any_.finish();
}

// Section 1: a msg seen twice (same src_ip dst_ip dst_qpn psn_first op, t_first_ns less than
// 1 s after the kept one's) keeps the one with the smallest t_first_ns; the same key later is
// another message (a reused QPN and PSN). Ties of t_first_ns: the first given (the truth
// has no two messages alike; the contract breaks such ties by the other fields).
void E2eTruth::dedup_msgs() {
    // The messages by key, then by t_first_ns, then as given: the first of each key stays.
    struct Key {
        uint64_t where;  // src_ip, dst_ip, dst_qpn
        uint64_t what;   // psn_first, op
        uint64_t t_first;
        uint32_t index;
        auto operator<=>(const Key&) const = default;
    };
    std::vector<Key> keys(all_msgs_.size());
    for (uint32_t k = 0; k < keys.size(); ++k) {
        const TruthMsg& m = all_msgs_[k];
        keys[k] = {(uint64_t{m.src_host} << 48) | (uint64_t{m.dst_host} << 32) | m.dst_qpn,
                   (uint64_t{m.psn_first} << 8) | static_cast<uint64_t>(m.op), m.t_first_ns, k};
    }
    std::sort(keys.begin(), keys.end());
    constexpr uint64_t kDuplicateWindowNs = 1'000'000'000;
    std::vector<bool> keep(all_msgs_.size(), false);
    uint64_t kept_at = 0;  // t_first_ns of the key's message kept last
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const bool same_key =
            i > 0 && keys[i].where == keys[i - 1].where && keys[i].what == keys[i - 1].what;
        if (same_key && keys[i].t_first - kept_at < kDuplicateWindowNs) {
            ++summary_.duplicate_msgs;
            continue;
        }
        keep[keys[i].index] = true;
        kept_at = keys[i].t_first;
    }
    msgs_.reserve(all_msgs_.size() - summary_.duplicate_msgs);
    for (uint32_t k = 0; k < all_msgs_.size(); ++k)
        if (keep[k]) msgs_.push_back(&all_msgs_[k]);
    t_recv_poll_.assign(msgs_.size(), std::nullopt);
}

// Section 4 "Completion of a work request".
void E2eTruth::complete_wrs() {
    std::vector<uint32_t> order;  // an incarnation's completions by (wr_id, canonical order)
    std::vector<std::pair<uint64_t, std::size_t>> cursors;  // wr_id -> next candidate
    for (uint32_t q = 0; q < incs_.size(); ++q) {
        const std::span<Wr> w = wrs_.of(q);
        const std::span<const Comp> comps = sends_.of(q);
        order.resize(comps.size());
        for (uint32_t k = 0; k < comps.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t b) { return comps[a].wr_id < comps[b].wr_id; });
        // Each signaled w takes the first untaken send completion with its wr_id at or after
        // its post. Posts come in time order, so a completion skipped as too early for one
        // is too early for every later one: a cursor per wr_id (a place in `order`) suffices.
        cursors.clear();
        for (Wr& wr : w) {
            const auto first =
                std::lower_bound(order.begin(), order.end(), wr.wr_id,
                                 [&](uint32_t k, uint64_t id) { return comps[k].wr_id < id; });
            if (first == order.end() || comps[*first].wr_id != wr.wr_id) continue;
            auto cur = std::find_if(cursors.begin(), cursors.end(),
                                    [&](const auto& c) { return c.first == wr.wr_id; });
            if (cur == cursors.end())
                cur = cursors.insert(cursors.end(), {wr.wr_id, first - order.begin()});
            std::size_t& at = cur->second;
            while (at < order.size() && comps[order[at]].wr_id == wr.wr_id &&
                   comps[order[at]].wall < wr.wall)
                ++at;
            if (at == order.size() || comps[order[at]].wr_id != wr.wr_id) continue;
            const Comp& c = comps[order[at]];
            // v1.3: an unsignaled w has a completion of its own only when it failed.
            if (!wr.signaled && c.status == WcStatus::success) continue;
            ++at;
            wr.t_poll = c.wall;
            wr.status = c.status;
        }
        // v1.3: an unsignaled w without one is covered by the poll of the first signaled
        // w' after it in W that has a completion (t_covered_ns, information only).
        std::optional<int64_t> t;
        for (std::size_t k = w.size(); k-- > 0;) {
            if (w[k].signaled) {
                if (w[k].t_poll) t = w[k].t_poll;
                continue;
            }
            if (!w[k].t_poll) w[k].t_covered = t;
        }
    }
}

// Section 3 "Time": one candidate is taken whatever the time (reading); among several, the
// incarnation alive at host time t_first_ns + theta_h, else the latest created before it,
// else none.
std::optional<uint32_t> E2eTruth::choose(std::span<const uint32_t> cands, uint64_t t_obs,
                                         const std::vector<int64_t>& theta) const {
    if (cands.empty()) return std::nullopt;
    if (cands.size() == 1) return cands[0];
    std::optional<uint32_t> alive, before;
    for (uint32_t c : cands) {
        const Incarnation& q = incs_[c];
        const int64_t t = static_cast<int64_t>(t_obs) + theta[q.host];
        if (q.t_create > t) continue;
        if (t < q.t_end && (!alive || incs_[*alive].t_create < q.t_create)) alive = c;
        if (!before || incs_[*before].t_create < q.t_create) before = c;
    }
    return alive ? alive : before;
}

E2eTruth::Join E2eTruth::join(const std::vector<int64_t>& theta) const {
    Join j;
    j.req.assign(msgs_.size(), std::nullopt);
    j.resp.assign(msgs_.size(), std::nullopt);
    j.m.reserve(msgs_.size());
    j.unmatched_wr.assign(incs_.size(), 0);
    j.per_msg.assign(msgs_.size(), MsgJoin{});
    for (uint32_t k = 0; k < msgs_.size(); ++k) {
        const TruthMsg& m = *msgs_[k];
        // Section 3: requester candidates are the incarnations at src_ip whose peer is
        // (dst_ip, dst_qpn); if none, those at src_ip with qpn == src_qpn.
        std::span<const uint32_t> cands =
            by_peer_.find(peer_key(m.src_host, m.dst_host, m.dst_qpn));
        const bool by_peer = !cands.empty();
        if (!by_peer && m.src_qpn) cands = by_addr_.find(addr_key(m.src_host, *m.src_qpn));
        j.used_time |= cands.size() > 1;
        j.req[k] = choose(cands, m.t_first_ns, theta);
        const std::span<const uint32_t> responders = by_addr_.find(addr_key(m.dst_host, m.dst_qpn));
        j.used_time |= responders.size() > 1;
        j.resp[k] = choose(responders, m.t_first_ns, theta);
        if (!j.req[k]) {
            // No requester incarnation: no e2e record; counted by whether a host trace uses
            // the source address (reading: a message whose candidates were all created
            // after it counts as having none).
            ++(traced_ip_[m.src_host] ? j.src_untraced : j.src_host_untraced);
            continue;
        }
        // The host's view wins over a disagreeing dataplane pair.
        if (by_peer && m.src_qpn && *m.src_qpn != incs_[*j.req[k]].qpn) ++j.pair_conflicts;
        j.m.add(*j.req[k], k);
    }
    j.m.finish(incs_.size());
    for (uint32_t q = 0; q < incs_.size(); ++q) {
        const std::span<uint32_t> mq = j.m.of(q);
        const std::span<const Wr> w = wrs_.of(q);
        if (mq.empty()) {
            j.unmatched_wr[q] = w.size();
            continue;
        }
        // Section 4 M order: ((psn_first - base) mod 2^24, t_first_ns), base = sq_psn if
        // known, else the psn_first of the message with the smallest (t_first_ns, psn_first).
        uint32_t base = 0;
        if (incs_[q].sq_psn) {
            base = *incs_[q].sq_psn;
        } else {
            const TruthMsg* first = msgs_[mq[0]];
            for (uint32_t k : mq) {
                const TruthMsg& x = *msgs_[k];
                if (std::tie(x.t_first_ns, x.psn_first) <
                    std::tie(first->t_first_ns, first->psn_first))
                    first = &x;
            }
            base = first->psn_first;
        }
        std::stable_sort(mq.begin(), mq.end(), [&](uint32_t x, uint32_t y) {
            const TruthMsg& a = *msgs_[x];
            const TruthMsg& b = *msgs_[y];
            return std::make_pair(proto::psn_sub(a.psn_first, base), a.t_first_ns) <
                   std::make_pair(proto::psn_sub(b.psn_first, base), b.t_first_ns);
        });
        // Agree(w, m): same family; SEND len == bytes, WRITE/READ len == dma_len, atomics
        // len == 8; WRITE, READ, atomics also remote_addr == va and rkey == rkey. A message
        // that never completed, whose length is its bytes seen (a SEND, a WRITE without its
        // First), agrees with a request at least that long: its last packets may be lost.
        auto agree = [&](std::size_t wi, std::size_t mi) {
            const Wr& x = w[wi];
            const TruthMsg& y = *msgs_[mq[mi]];
            if (x.fam != y.op) return false;
            const bool unfinished = y.status != TruthStatus::ok;
            const auto seen_fits = [&](uint64_t seen) {
                return x.len == seen || (unfinished && seen <= x.len);
            };
            switch (y.op) {
                case OpType::send:
                    return seen_fits(y.bytes);
                case OpType::write:  // its RETH length; bytes without one (reading)
                    if (y.dma_len ? x.len != *y.dma_len : !seen_fits(y.bytes)) return false;
                    break;
                case OpType::read:  // without dma_len it agrees with nothing
                    if (!y.dma_len || x.len != *y.dma_len) return false;
                    break;
                case OpType::cmp_swap:
                case OpType::fetch_add:
                    if (x.len != 8) return false;
                    break;
            }
            return x.remote_addr == y.va && x.rkey == y.rkey;
        };
        std::size_t matched = 0;
        align(w.size(), mq.size(), agree, [&](std::size_t wi, std::size_t mi, bool resync) {
            j.matches.push_back({q, static_cast<uint32_t>(wi), mq[mi], resync});
            j.per_msg[mq[mi]].matched = true;
            ++matched;
        });
        // Section 8 `injected_message`: wire-only after the first matched message in M.
        bool seen_match = false;
        for (uint32_t k : mq) {
            MsgJoin& x = j.per_msg[k];
            x.wire_only_after_match = seen_match && !x.matched;
            seen_match |= x.matched;
        }
        j.unmatched_wr[q] = w.size() - matched;
        j.wire_only += mq.size() - matched;
    }
    return j;
}

// Section 5: per host, over the matched messages of its requesters, lo = max(t_post -
// t_first_ns), hi = min(t_poll - t_ack_ns); the offset from them.
std::vector<int64_t> E2eTruth::estimate(const Join& j, std::vector<ClockRecord>* out) const {
    const std::size_t nh = sc_.hosts.size();
    std::vector<ClockRecord> c(nh);
    for (uint16_t h = 0; h < nh; ++h) c[h].host = h;
    for (const Join::Match& x : j.matches) {
        const Wr& w = wrs_.of(x.inc)[x.w];
        const TruthMsg& m = *msgs_[x.msg];
        ClockRecord& r = c[incs_[x.inc].host];
        ++r.matches;
        const int64_t lo = w.wall - static_cast<int64_t>(m.t_first_ns);
        r.lo = r.lo ? std::max(*r.lo, lo) : lo;
        if (w.t_poll && m.t_ack_ns) {
            const int64_t hi = *w.t_poll - static_cast<int64_t>(*m.t_ack_ns);
            r.hi = r.hi ? std::min(*r.hi, hi) : hi;
        }
    }
    // Section 6 record order: clocks by host name (as text: h10 before h2).
    std::vector<uint16_t> by_name(nh);
    for (uint16_t h = 0; h < nh; ++h) by_name[h] = h;
    std::stable_sort(by_name.begin(), by_name.end(), [](uint16_t x, uint16_t y) {
        return trace_host_name(x) < trace_host_name(y);
    });
    std::vector<int64_t> theta(nh, 0);
    std::vector<bool> has_qp(nh, false);
    for (const Incarnation& q : incs_) has_qp[q.host] = true;
    for (uint16_t h = 0; h < nh; ++h) {
        ClockRecord& r = c[h];
        if (r.lo && r.hi) {
            r.offset = *r.lo + floor_half(*r.hi - *r.lo);
            r.source = "midpoint";
            r.consistent = *r.lo <= *r.hi;  // an empty intersection is reported, not hidden
        } else if (r.lo) {
            r.offset = *r.lo;
            r.source = "lower";
        } else if (r.hi) {
            r.offset = *r.hi;
            r.source = "upper";
        }
        theta[h] = r.offset;
    }
    if (out)
        for (uint16_t h : by_name)
            if (has_qp[h]) out->push_back(c[h]);  // a clock record per host with a QP
    return theta;
}

// Section 4 "Responder RECV completions".
void E2eTruth::match_receives(const Join& j, const std::vector<int64_t>&) {
    Grouped<uint32_t> s;
    for (uint32_t k = 0; k < msgs_.size(); ++k) {
        const TruthMsg& m = *msgs_[k];
        if (!j.resp[k]) continue;
        // Every SEND, and every WRITE with imm, consumes a receive.
        if (m.op == OpType::send || (m.op == OpType::write && m.imm)) s.add(*j.resp[k], k);
    }
    s.finish(incs_.size());
    for (uint32_t r = 0; r < incs_.size(); ++r) {
        const std::span<uint32_t> list = s.of(r);
        if (list.empty()) continue;
        // In the M order, the base being the responder's rq_psn (reading: its sq_psn numbers
        // the other direction), else the first message's psn_first.
        uint32_t base = 0;
        if (incs_[r].rq_psn) {
            base = *incs_[r].rq_psn;
        } else {
            const TruthMsg* first = msgs_[list[0]];
            for (uint32_t k : list) {
                const TruthMsg& x = *msgs_[k];
                if (std::tie(x.t_first_ns, x.psn_first) <
                    std::tie(first->t_first_ns, first->psn_first))
                    first = &x;
            }
            base = first->psn_first;
        }
        std::stable_sort(list.begin(), list.end(), [&](uint32_t x, uint32_t y) {
            const TruthMsg& a = *msgs_[x];
            const TruthMsg& b = *msgs_[y];
            return std::make_pair(proto::psn_sub(a.psn_first, base), a.t_first_ns) <
                   std::make_pair(proto::psn_sub(b.psn_first, base), b.t_first_ns);
        });
        const std::span<const Comp> c = recvs_.of(r);
        // A pair agrees when the kinds match (SEND -> RECV, WRITE with imm ->
        // RECV_RDMA_WITH_IMM) and, for SEND, byte_len == bytes.
        auto agree = [&](std::size_t mi, std::size_t ci) {
            const TruthMsg& m = *msgs_[list[mi]];
            if (m.op == OpType::send)
                return c[ci].opcode == WcOpcode::recv && c[ci].byte_len == m.bytes;
            return c[ci].opcode == WcOpcode::recv_rdma_with_imm;
        };
        align(list.size(), c.size(), agree, [&](std::size_t mi, std::size_t ci, bool) {
            t_recv_poll_[list[mi]] = c[ci].wall;
            ++summary_.recv_matched;
        });
    }
}

// Section 6 `e2e`: times in observer ns, host times shifted by -theta.
void E2eTruth::build_records(const Join& j, const std::vector<int64_t>& theta) {
    e2e_.reserve(j.matches.size());
    for (const Join::Match& x : j.matches) {
        const Wr& w = wrs_.of(x.inc)[x.w];
        const TruthMsg& m = *msgs_[x.msg];
        const int64_t th = theta[incs_[x.inc].host];
        E2eRecord e;
        e.req = x.inc;
        e.resp = j.resp[x.msg];
        e.msg = &m;
        e.wr_id = w.wr_id;
        e.bytes = w.len;  // what the application moved
        e.signaled = w.signaled;
        e.resync = x.resync;
        e.wr_uid = w.uid;
        e.t_post_ns = w.wall - th;
        if (w.t_poll) e.t_poll_ns = *w.t_poll - th;
        if (w.t_covered) e.t_covered_ns = *w.t_covered - th;
        e.wc_status = w.status;
        if (e.resp && t_recv_poll_[x.msg])
            e.t_recv_poll_ns = *t_recv_poll_[x.msg] - theta[incs_[*e.resp].host];
        ++(x.resync ? summary_.resync : summary_.exact);
        e2e_.push_back(e);
    }
    // Section 6 record order: by (t_first_ns, src_ip, src_qpn, psn_first).
    std::stable_sort(e2e_.begin(), e2e_.end(), [&](const E2eRecord& a, const E2eRecord& b) {
        return std::make_tuple(a.msg->t_first_ns, sc_.hosts[a.msg->src_host].ip, incs_[a.req].qpn,
                               a.msg->psn_first) <
               std::make_tuple(b.msg->t_first_ns, sc_.hosts[b.msg->src_host].ip, incs_[b.req].qpn,
                               b.msg->psn_first);
    });
    summary_.e2e = e2e_.size();
    for (uint64_t u : j.unmatched_wr) summary_.unmatched_wr += u;
    summary_.wire_only = j.wire_only;
    summary_.src_untraced = j.src_untraced;
    summary_.src_host_untraced = j.src_host_untraced;
    summary_.pair_conflicts = j.pair_conflicts;
    summary_.qps = incs_.size();
    std::vector<bool> has_qp(sc_.hosts.size(), false);
    for (const Incarnation& q : incs_) has_qp[q.host] = true;
    summary_.hosts = static_cast<uint64_t>(std::count(has_qp.begin(), has_qp.end(), true));
    unmatched_ = j.unmatched_wr;
}

std::span<const uint32_t> E2eTruth::incarnations_at(uint16_t ip, uint32_t qpn) const {
    return by_addr_.find(addr_key(ip, qpn));
}

// The dataplane endpoint record of (ip, qpn) belongs to the incarnation chosen among
// `cands` at its t_first_ns + theta, as messages do (section 3 "Time").
std::optional<uint32_t> E2eTruth::endpoint_owner(std::span<const uint32_t> cands,
                                                 const TruthEndpoint& ep,
                                                 const std::vector<int64_t>& theta) const {
    return choose(cands, ep.t_first_ns, theta);
}

// Section 6 `app`, one per (host, ip, pid, comm, cgroup) owning a requester incarnation
// with a matched message, over that process's e2e records as requester.
void E2eTruth::build_apps(const std::vector<int64_t>& theta) {
    struct Acc {
        AppRecord r;
        std::vector<uint32_t> incs;  // requester incarnations with a match
        std::vector<int64_t> host_ns, net_ns, completion_ns, total_ns;
    };
    std::map<std::tuple<uint16_t, uint16_t, uint32_t>, Acc> apps;
    std::vector<bool> counted(incs_.size(), false);  // an incarnation belongs to one app
    for (const E2eRecord& e : e2e_) {
        const Incarnation& q = incs_[e.req];
        Acc& a = apps[{q.host, *q.ip, q.pid}];
        a.r.host = q.host;
        a.r.ip = *q.ip;
        a.r.proc = q.proc;
        if (!counted[e.req]) a.incs.push_back(e.req), counted[e.req] = true;
        const int op = static_cast<int>(e.msg->op);
        ++a.r.msgs[op];
        a.r.bytes[op] += e.bytes;
        if (const auto v = e.host_ns()) a.host_ns.push_back(*v);
        if (const auto v = e.net_ns()) a.net_ns.push_back(*v);
        // v1.3: what the application saw complete - signaled work requests only.
        if (e.signaled) {
            ++a.r.signaled_wrs;
            if (const auto v = e.completion_ns()) a.completion_ns.push_back(*v);
            if (const auto v = e.total_ns()) a.total_ns.push_back(*v);
        }
        a.r.retx_pkts += e.msg->retx_pkts;
        a.r.naks += e.msg->naks;
    }
    const auto& eps = truth_.endpoints();
    // Every incarnation of each app's process at its IP, once.
    std::map<std::tuple<uint16_t, uint16_t, uint32_t>, std::vector<uint32_t>> owned;
    for (uint32_t i = 0; i < incs_.size(); ++i) {
        const Incarnation& q = incs_[i];
        if (q.ip && apps.contains({q.host, *q.ip, q.pid}))
            owned[{q.host, *q.ip, q.pid}].push_back(i);
    }
    for (auto& [key, a] : apps) {
        a.r.qps = a.incs.size();
        a.r.host_ns = percentiles(std::move(a.host_ns));
        a.r.net_ns = percentiles(std::move(a.net_ns));
        a.r.completion_ns = percentiles(std::move(a.completion_ns));
        a.r.total_ns = percentiles(std::move(a.total_ns));
        for (uint32_t i : owned[key]) {
            const Incarnation& q = incs_[i];
            a.r.unmatched_wr += unmatched_[i];
            // cnps, ecn_ce: received at its own endpoints.
            const int32_t e = truth_.find(*q.ip, q.qpn);
            if (e >= 0) {
                const TruthEndpoint& ep = eps[static_cast<std::size_t>(e)];
                if (endpoint_owner(by_addr_.find(addr_key(*q.ip, q.qpn)), ep, theta) == i) {
                    a.r.cnps += ep.cnps;
                    a.r.ecn_ce += ep.ecn_ce;
                }
            }
            // ecn_ce_caused: ecn_ce at the peer endpoint of its connected QPs.
            if (!q.peer_ip) continue;
            const int32_t f = truth_.find(*q.peer_ip, q.dest_qpn);
            if (f < 0) continue;
            const TruthEndpoint& peer = eps[static_cast<std::size_t>(f)];
            if (endpoint_owner(by_peer_any_.find(addr_key(*q.peer_ip, q.dest_qpn)), peer, theta) ==
                i)
                a.r.ecn_ce_caused += peer.ecn_ce;
        }
        apps_.push_back(a.r);
    }
    // Section 6 record order: by (host, ip, pid, comm, cgroup), host names as text.
    std::stable_sort(apps_.begin(), apps_.end(), [&](const AppRecord& x, const AppRecord& y) {
        return std::make_tuple(trace_host_name(x.host), sc_.hosts[x.ip].ip, trace_.pid(x.proc)) <
               std::make_tuple(trace_host_name(y.host), sc_.hosts[y.ip].ip, trace_.pid(y.proc));
    });
    summary_.apps = apps_.size();
}

// Section 6 `pair`: an incarnation with a peer from its RTR whose endpoint the dataplane
// reported with no pair or another one.
void E2eTruth::build_pairs(const std::vector<int64_t>& theta) {
    const auto& eps = truth_.endpoints();
    for (uint32_t i = 0; i < incs_.size(); ++i) {
        const Incarnation& q = incs_[i];
        if (!q.ip || !q.peer_ip) continue;
        const int32_t e = truth_.find(*q.ip, q.qpn);
        if (e < 0) continue;  // the dataplane never saw the endpoint
        const TruthEndpoint& ep = eps[static_cast<std::size_t>(e)];
        if (endpoint_owner(by_addr_.find(addr_key(*q.ip, q.qpn)), ep, theta) != i) continue;
        PairRecord p;
        p.inc = i;
        if (ep.peer >= 0) {
            const TruthEndpoint& f = eps[static_cast<std::size_t>(ep.peer)];
            if (f.host == *q.peer_ip && f.qpn == q.dest_qpn) continue;  // the same pair
            p.dp_pair_by = ep.pair_by;
            p.dp_peer_ip = f.host;
            p.dp_peer_qpn = f.qpn;
        }
        pairs_.push_back(p);
    }
    std::stable_sort(pairs_.begin(), pairs_.end(), [&](const PairRecord& x, const PairRecord& y) {
        const Incarnation& a = incs_[x.inc];
        const Incarnation& b = incs_[y.inc];
        return std::make_tuple(sc_.hosts[*a.ip].ip, a.qpn, a.t_create) <
               std::make_tuple(sc_.hosts[*b.ip].ip, b.qpn, b.t_create);
    });
    summary_.pairs = pairs_.size();
}

// The generator's knowledge, to check the rules: the message a matched work request made.
void E2eTruth::check(const Join&) {
    for (const E2eRecord& e : e2e_) {
        if (e.wr_uid == e.msg->msg_uid) continue;
        HostRecord real;
        real.kind = HostRec::post_send;
        real.ref = e.msg->msg_uid;
        const WorkRequest truly = trace_.work_request(real);
        const Wr& w = [&]() -> const Wr& {
            for (const Wr& x : wrs_.of(e.req))
                if (x.uid == e.wr_uid) return x;
            return wrs_.of(e.req)[0];
        }();
        const bool same = family(truly.opcode) == w.fam && truly.len == w.len &&
                          truly.remote_addr == w.remote_addr && truly.rkey == w.rkey;
        ++(same ? indistinguishable_ : mispaired_);
    }
}

}  // namespace insert::gen
