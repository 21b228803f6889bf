#include "bench/gen/host_trace.hpp"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "bench/gen/rng.hpp"
#include "bench/gen/simulator.hpp"

namespace insert::gen {

namespace {

constexpr uint64_t kTraceSeed = 0x484F535454524143ull;  // "HOSTTRAC"

// Host-side steps of a QP's set-up, after its create_qp (ns): the two ends exchange their
// QPNs and PSNs out of band meanwhile (or through CM, which calls the same verbs).
constexpr int64_t kStepNs = 1'000;
constexpr int64_t kRecvLeadNs = 20'000;         // receives are posted ahead of their message
constexpr int64_t kTeardownNs = 10'000;         // last completion -> destroy_qp
constexpr int64_t kProcessLeadNs = 100'000;     // process start -> its first create_qp
constexpr int64_t kTraceLeadNs = 1'000'000;     // trace_start -> the host's first record
constexpr int64_t kLostReportNs = 250'000'000;  // insert-trace reports drops every 250 ms
constexpr uint64_t kWrSlots = 256;

bool consumes_receive(const MsgInfo& m) {
    return m.op == OpType::send || (m.op == OpType::write && m.imm);
}

uint64_t loss_key(uint32_t conn, uint32_t msg, TraceVerb verb) {
    return (uint64_t{conn} << 34) | (uint64_t{msg} << 2) | static_cast<uint64_t>(verb);
}

}  // namespace

const char* wr_opcode_name(WrOpcode op) {
    static constexpr const char* kNames[] = {"SEND",
                                             "SEND_WITH_IMM",
                                             "SEND_WITH_INV",
                                             "RDMA_WRITE",
                                             "RDMA_WRITE_WITH_IMM",
                                             "RDMA_READ",
                                             "ATOMIC_CMP_AND_SWP",
                                             "ATOMIC_FETCH_AND_ADD"};
    return kNames[static_cast<int>(op)];
}

const char* wc_opcode_name(WcOpcode op) {
    static constexpr const char* kNames[] = {
        "SEND", "RDMA_WRITE", "RDMA_READ", "COMP_SWAP", "FETCH_ADD", "RECV", "RECV_RDMA_WITH_IMM"};
    return kNames[static_cast<int>(op)];
}

const char* wc_status_name(WcStatus s) {
    switch (s) {
        case WcStatus::rem_access_err:
            return "REM_ACCESS_ERR";
        case WcStatus::wr_flush_err:
            return "WR_FLUSH_ERR";
        case WcStatus::success:
        case WcStatus::none:
            break;
    }
    return "SUCCESS";
}

uint32_t wc_status_code(WcStatus s) {
    switch (s) {
        case WcStatus::rem_access_err:
            return 10;  // IBV_WC_REM_ACCESS_ERR
        case WcStatus::wr_flush_err:
            return 5;  // IBV_WC_WR_FLUSH_ERR
        case WcStatus::success:
        case WcStatus::none:
            break;
    }
    return 0;
}

// The random draws of the model, in one stream, in a fixed order (hosts, then connection
// by connection, then processes), and the scenario's explicit losses.
struct HostTrace::Draws {
    Rng rng;
    std::unordered_set<uint64_t> targeted;
    std::vector<std::pair<uint16_t, int64_t>> drops;  // (host, simulation time)

    explicit Draws(uint64_t seed) : rng(seed ^ kTraceSeed) {}
    int64_t jitter(uint64_t max) { return static_cast<int64_t>(rng.between(0, max)); }
};

HostTrace::HostTrace(const Scenario& sc, const Simulator& sim, uint64_t seed)
    : sc_(sc), sim_(sim), layout_(sim.layout()) {
    Draws d(seed);
    for (const TraceLoss& l : sc.host_trace.lost_records)
        d.targeted.insert(loss_key(l.conn, l.msg, l.verb));
    qps_.resize(sim.conns().size() * 2);
    open_qps_.assign(layout_.processes().size(), 0);
    proc_used_.assign(layout_.processes().size(), 0);
    recs_.reserve(sim.messages().size() * 3 + sim.conns().size() * 10);
    build_hosts(d);
    for (uint32_t c = 0; c < sim.conns().size(); ++c) build_conn(d, c);
    build_processes(d);
    // Drops are reported by `lost` records at insert-trace's next 250 ms housekeeping tick
    // after the drop (ticks counted from the host's trace_start).
    std::vector<int64_t> start(hosts_.size(), INT64_MAX);
    for (const HostRecord& r : recs_) start[r.host] = std::min(start[r.host], true_ns(r));
    for (uint16_t h = 0; h < hosts_.size(); ++h) {
        if (!hosts_[h].traced || start[h] == INT64_MAX) continue;
        start[h] -= kTraceLeadNs;
        add(start[h], HostRec::trace_start, h, kNoProcess, h);
    }
    lost_ = d.drops.size();
    std::stable_sort(d.drops.begin(), d.drops.end());
    uint64_t total = 0;
    for (std::size_t i = 0; i < d.drops.size();) {
        const uint16_t h = d.drops[i].first;
        const int64_t tick = (d.drops[i].second - start[h]) / kLostReportNs + 1;
        std::size_t j = i;
        while (j < d.drops.size() && d.drops[j].first == h &&
               (d.drops[j].second - start[h]) / kLostReportNs + 1 == tick)
            ++j;
        total = (i > 0 && d.drops[i - 1].first == h) ? total + (j - i) : j - i;
        add(start[h] + tick * kLostReportNs, HostRec::lost, h, kNoProcess,
            static_cast<uint32_t>(j - i), static_cast<uint32_t>(total));
        i = j;
    }
    finish_records();
}

void HostTrace::build_hosts(Draws& d) {
    const HostTraceSpec& ht = sc_.host_trace;
    hosts_.resize(sc_.hosts.size());
    for (uint16_t h = 0; h < hosts_.size(); ++h) {
        TraceHost& th = hosts_[h];
        const int64_t max = ht.clock_offset_max_ns;
        th.theta_ns = static_cast<int64_t>(d.rng.between(0, static_cast<uint64_t>(2 * max))) - max;
        if (h == 0) th.theta_ns = 0;  // one host synchronised with the observer (PTP-like)
        if (!ht.clock_offsets_ns.empty()) th.theta_ns = ht.clock_offsets_ns[h];
        // CLOCK_REALTIME - CLOCK_MONOTONIC: the epoch minus an uptime of 20 min to 11 days.
        th.wall_offset_ns =
            static_cast<int64_t>(kEpochNs) -
            static_cast<int64_t>(d.rng.between(1'200'000'000'000ull, 1'000'000'000'000'000ull));
        auto listed = [h](const std::vector<uint32_t>& v) {
            return std::find(v.begin(), v.end(), h) != v.end();
        };
        th.traced = !listed(ht.untraced_hosts);
        th.datapath = th.traced && !listed(ht.datapath_off);
        // softverbs reports `ip: null` until the process queries a GID, which perftest does
        // after creating its QP: odd hosts behave so, the correlator takes the QP's IP from
        // its later records (docs/correlation.md section 2).
        th.ip_at_create = h % 2 == 0;
    }
}

void HostTrace::add(int64_t sim_ns, HostRec kind, uint16_t host, uint32_t proc, uint32_t ref,
                    uint32_t aux, uint8_t flags) {
    if (!hosts_[host].traced) return;
    HostRecord r;
    r.wall_ns = static_cast<int64_t>(kEpochNs) + sim_ns + hosts_[host].theta_ns;
    r.ref = ref;
    r.aux = aux;
    r.proc = proc;
    r.host = host;
    r.kind = kind;
    r.flags = flags;
    recs_.push_back(r);
}

bool HostTrace::keep_datapath(Draws& d, uint16_t host, uint32_t conn, uint32_t msg_index,
                              TraceVerb verb) {
    if (!hosts_[host].datapath) return false;  // untraced, or --datapath off: never made
    const bool lost =
        (!d.targeted.empty() && d.targeted.contains(loss_key(conn, msg_index, verb))) ||
        d.rng.chance(sc_.host_trace.loss);
    return !lost;
}

void HostTrace::build_conn(Draws& d, uint32_t c) {
    const ConnInfo& ci = sim_.conns()[c];
    if (ci.num_msgs == 0) return;  // no traffic: its QPs are never created
    const HostTraceSpec& ht = sc_.host_trace;
    const HugeVector<MsgInfo>& msgs = sim_.messages();
    const HugeVector<MsgHostEvents>& ev = sim_.host_events();
    const uint16_t ha = static_cast<uint16_t>(ci.spec.a), hb = static_cast<uint16_t>(ci.spec.b);
    const uint32_t first = ci.first_msg, end = ci.first_msg + ci.num_msgs;
    auto nic_post = [&](uint32_t uid) {
        return static_cast<int64_t>(ev[uid].post_ns != kNoTime ? ev[uid].post_ns
                                                               : msgs[uid].post_ns);
    };

    // The connection's first traffic: its first post, or the CM REQ before it (the
    // simulator's set-up sends it 3 CM delays before the first message's post time).
    int64_t first_traffic = nic_post(first);
    if (ci.spec.cm) {
        const uint64_t at = msgs[first].post_ns, lead = 3 * sc_.timing.cm_delay_ns;
        first_traffic = std::min<int64_t>(first_traffic, at > lead ? at - lead : 0);
    }
    const int64_t margin = static_cast<int64_t>(ht.life_margin_ns());
    const int64_t c0 = first_traffic - static_cast<int64_t>(ht.setup_lead_ns) - margin -
                       d.jitter(ht.setup_lead_ns / 8);

    for (int side = 0; side < 2; ++side) {
        HostQp& q = qps_[c * 2 + side];
        q.conn = c;
        q.side = static_cast<uint8_t>(side);
        q.exists = true;
        q.uc = ci.spec.transport == ConnTransport::uc;
        q.proc = layout_.process_of(c, side);
        q.qpn = side == 0 ? ci.qpn_a : ci.qpn_b;
        q.peer_host = static_cast<uint16_t>(side == 0 ? hb : ha);
        q.dest_qpn = side == 0 ? ci.qpn_b : ci.qpn_a;
        q.sq_psn = side == 0 ? ci.psn_a : ci.psn_b;
        q.rq_psn = side == 0 ? ci.psn_b : ci.psn_a;
        q.mtu = ci.spec.mtu;
        // The object's address: a fresh one per QP of its process, unless the QP takes the
        // QPN of a destroyed QP of the same process - the allocator hands the freed object
        // back (the correlator must tell the two lives apart by time).
        const uint32_t seq = proc_used_[q.proc]++;
        q.ptr = ctx(q.proc) + 0x100000 + 0x400ull * seq;
        const QpnReuse& r = layout_.reuse(c);
        if (r.active() && r.side == side) {
            const HostQp& old = qps_[r.from * 2 + r.from_side];
            if (old.proc == q.proc) q.ptr = old.ptr;
        }
        q.wr_base = q.ptr + 0x8000'0000'0000ull;
        q.create_ns = c0 + side * kStepNs;
        const uint16_t h = side == 0 ? ha : hb;
        const uint32_t qi = c * 2 + side;
        add(q.create_ns, HostRec::create_qp, h, q.proc, qi);
        add(c0 + (2 + side) * kStepNs, HostRec::modify_init, h, q.proc, qi);
        add(c0 + (4 + side) * kStepNs, HostRec::modify_rtr, h, q.proc, qi);
        add(c0 + (6 + side) * kStepNs, HostRec::modify_rts, h, q.proc, qi);
    }
    const int64_t ready = c0 + 8 * kStepNs;

    // Requester: a post per work request, the NIC taking it post_to_tx later; a poll per
    // signaled one after its NIC completion. A QP's posts, and its polls, keep their order.
    int64_t conn_end = ready;
    int64_t last_post = INT64_MIN, last_poll = INT64_MIN;
    for (uint32_t uid = first; uid < end; ++uid) {
        const MsgInfo& m = msgs[uid];
        if (ev[uid].post_ns == kNoTime) continue;  // never posted (cannot happen: CM completes)
        const int64_t post =
            std::max(last_post + 1, nic_post(uid) - static_cast<int64_t>(ht.post_to_tx_ns) -
                                        d.jitter(ht.post_to_tx_jitter_ns));
        last_post = post;
        const uint32_t k = ht.unsignaled_every;
        const bool signaled = k <= 1 || (m.index + 1) % k == 0 || m.index + 1 == ci.num_msgs;
        if (keep_datapath(d, ha, c, m.index, TraceVerb::post_send))
            add(post, HostRec::post_send, ha, qps_[c * 2].proc, uid, 0, signaled ? kSignaled : 0);
        else if (hosts_[ha].datapath)
            d.drops.emplace_back(ha, post);
        conn_end = std::max(conn_end, post);
        if (ev[uid].done_ns == kNoTime) continue;
        conn_end = std::max(conn_end, static_cast<int64_t>(ev[uid].done_ns));
        if (!signaled) continue;
        const int64_t poll = std::max(last_poll + 1, static_cast<int64_t>(ev[uid].done_ns) +
                                                         static_cast<int64_t>(ht.poll_delay_ns) +
                                                         d.jitter(ht.poll_jitter_ns));
        last_poll = poll;
        if (keep_datapath(d, ha, c, m.index, TraceVerb::poll_cq))
            add(poll, HostRec::poll_send, ha, qps_[c * 2].proc, uid);
        else if (hosts_[ha].datapath)
            d.drops.emplace_back(ha, poll);
        conn_end = std::max(conn_end, poll);
    }

    // Responder: a receive posted ahead of each SEND / WRITE with immediate (FIFO: the k-th
    // delivered message takes the k-th receive), and its completion polled after delivery.
    // A message the scenario meets with RNR NAKs found no receive: its receive is posted
    // just before the retry that succeeds.
    std::vector<uint32_t> rnr_msgs;
    for (const TargetSpec& t : sc_.imp.targets)
        if (t.action == Action::rnr && t.conn == c) rnr_msgs.push_back(t.msg);
    int64_t last_recv_post = INT64_MIN, last_recv_poll = INT64_MIN;
    uint32_t posted = 0, delivered = 0;
    for (uint32_t uid = first; uid < end; ++uid) {
        const MsgInfo& m = msgs[uid];
        const uint64_t got = ev[uid].delivered_ns;
        if (got != kNoTime) conn_end = std::max(conn_end, static_cast<int64_t>(got));
        if (!consumes_receive(m)) continue;
        const bool rnr = std::find(rnr_msgs.begin(), rnr_msgs.end(), m.index) != rnr_msgs.end();
        int64_t at = std::max(ready + kStepNs, nic_post(uid) - kRecvLeadNs);
        if (got != kNoTime) at = std::min(at, static_cast<int64_t>(got) - kStepNs / 2);
        if (rnr && got != kNoTime) at = static_cast<int64_t>(got) - kStepNs;
        at = std::max(at, last_recv_post + 1);
        last_recv_post = at;
        if (keep_datapath(d, hb, c, m.index, TraceVerb::post_recv))
            add(at, HostRec::post_recv, hb, qps_[c * 2 + 1].proc, uid, posted);
        else if (hosts_[hb].datapath)
            d.drops.emplace_back(hb, at);
        ++posted;
        if (got == kNoTime) continue;
        const int64_t poll = std::max(
            last_recv_poll + 1, static_cast<int64_t>(got) + static_cast<int64_t>(ht.poll_delay_ns) +
                                    d.jitter(ht.poll_jitter_ns));
        last_recv_poll = poll;
        if (keep_datapath(d, hb, c, m.index, TraceVerb::poll_cq_recv))
            add(poll, HostRec::poll_recv, hb, qps_[c * 2 + 1].proc, uid, delivered);
        else if (hosts_[hb].datapath)
            d.drops.emplace_back(hb, poll);
        ++delivered;
        conn_end = std::max(conn_end, poll);
    }

    // A spoofed injection into the connection (attack_plan.hpp) follows its traffic: the QPs
    // live on until it was delivered.
    for (const Injection& inj : sim_.injections()) {
        if (inj.conn != c) continue;
        if (ev[inj.uid].delivered_ns != kNoTime)
            conn_end = std::max(conn_end, static_cast<int64_t>(ev[inj.uid].delivered_ns));
        if (ev[inj.uid].injected_ns != kNoTime &&
            (inj.kind == AttackKind::spoofed_first || inj.kind == AttackKind::spoofed_unacked))
            conn_end = std::max(conn_end, static_cast<int64_t>(ev[inj.uid].injected_ns));
    }

    // Teardown: both QPs go once everything of the connection is over; a QP whose process
    // exits without destroying it ends at the exit (build_processes) - unless a later
    // connection takes its QPN, which needs it destroyed.
    const int64_t down = conn_end + kTeardownNs + margin + d.jitter(kTeardownNs / 2);
    for (int side = 0; side < 2; ++side) {
        HostQp& q = qps_[c * 2 + side];
        q.end_ns = down + side * kStepNs;
        q.destroyed = !layout_.processes()[q.proc].exits_without_destroy;
    }
    // A QP whose QPN this connection reuses was destroyed for it.
    if (const QpnReuse& r = layout_.reuse(c); r.active()) {
        HostQp& old = qps_[r.from * 2 + r.from_side];
        old.destroyed = true;
        if (old.end_ns >= qps_[c * 2 + r.side].create_ns) ++reuse_overlaps_;
    }
}

void HostTrace::build_processes(Draws& d) {
    const auto& procs = layout_.processes();
    std::vector<int64_t> begin(procs.size(), INT64_MAX), last(procs.size(), INT64_MIN);
    std::vector<std::vector<uint32_t>> owned(procs.size());
    for (uint32_t i = 0; i < qps_.size(); ++i) {
        const HostQp& q = qps_[i];
        if (!q.exists) continue;
        owned[q.proc].push_back(i);
        begin[q.proc] = std::min(begin[q.proc], q.create_ns);
        last[q.proc] = std::max(last[q.proc], q.end_ns);
    }
    for (uint32_t p = 0; p < procs.size(); ++p) {
        if (begin[p] == INT64_MAX) continue;  // owns no QP: not an RDMA process at all
        const uint16_t h = procs[p].host;
        const int64_t start = begin[p] - kProcessLeadNs - d.jitter(kProcessLeadNs / 4);
        add(start, HostRec::open_device, h, p, p);
        add(start + kStepNs, HostRec::query_gid, h, p, p);
        add(start + 2 * kStepNs, HostRec::alloc_pd, h, p, p);
        add(start + 3 * kStepNs, HostRec::create_cq, h, p, p);
        const std::span<const HostMr> mrs = layout_.mrs_of(p);
        const uint32_t mr0 = static_cast<uint32_t>(mrs.data() - layout_.mrs().data());
        for (uint32_t k = 0; k < mrs.size(); ++k)
            add(start + (4 + k) * kStepNs, HostRec::reg_mr, h, p, mr0 + k);
        // An MR a stale_rkey attack names: registered with the others, deregistered before
        // the attack (attack_plan.hpp).
        int64_t at = start + (4 + static_cast<int64_t>(mrs.size())) * kStepNs;
        for (const HostLayout::RetiredMr& r : layout_.retired_mrs()) {
            if (layout_.mrs()[r.mr].proc != p) continue;
            add(at, HostRec::reg_mr, h, p, r.mr);
            add(std::max(at + kStepNs, static_cast<int64_t>(r.dereg_ns)), HostRec::dereg_mr, h, p,
                r.mr);
            at += kStepNs;
        }
        const int64_t exit = last[p] + 2 * kTeardownNs + d.jitter(kTeardownNs);
        for (uint32_t i : owned[p]) {
            HostQp& q = qps_[i];
            if (q.destroyed)
                add(q.end_ns, HostRec::destroy_qp, h, p, i);
            else
                q.end_ns = exit, ++open_qps_[p];
        }
        if (!procs[p].exits_without_destroy)
            for (uint32_t k = 0; k < mrs.size(); ++k)
                add(exit - kTeardownNs + k * kStepNs / 4, HostRec::dereg_mr, h, p, mr0 + k);
        add(exit, HostRec::process_exit, h, p, p);
    }
}

// By host, then by the host's clock (ties: the order the model made them). A process's
// records then get distinct times - a real tracer's clock reads never coincide for one
// thread's calls, and the correlator's canonical order (docs/correlation.md section 2)
// must not depend on tie-breaking - by moving a record that meets another of its process
// 1 ns later.
void HostTrace::finish_records() {
    std::stable_sort(recs_.begin(), recs_.end(), [](const HostRecord& a, const HostRecord& b) {
        return a.host != b.host ? a.host < b.host : a.wall_ns < b.wall_ns;
    });
    std::vector<int64_t> latest(layout_.processes().size(), INT64_MIN);
    bool moved = false;
    for (HostRecord& r : recs_) {
        if (r.proc == kNoProcess) continue;
        int64_t& l = latest[r.proc];
        if (r.wall_ns <= l) r.wall_ns = l + 1, moved = true;
        l = r.wall_ns;
    }
    if (!moved) return;
    // Rare and local: an insertion pass restores the order.
    for (std::size_t i = 1; i < recs_.size(); ++i) {
        const HostRecord r = recs_[i];
        std::size_t j = i;
        while (j > 0 && recs_[j - 1].host == r.host && recs_[j - 1].wall_ns > r.wall_ns) {
            recs_[j] = recs_[j - 1];
            --j;
        }
        recs_[j] = r;
    }
}

uint32_t HostTrace::qp_of(const HostRecord& r) const {
    switch (r.kind) {
        case HostRec::post_send:
        case HostRec::poll_send:
            return sim_.messages()[r.ref].conn * 2;
        case HostRec::post_recv:
        case HostRec::poll_recv:
            return sim_.messages()[r.ref].conn * 2 + 1;
        default:
            return r.ref;
    }
}

uint32_t HostTrace::tid(const HostRecord& r) const {
    const uint32_t pid = process(process_of(r)).pid;
    switch (r.kind) {
        case HostRec::post_send:
        case HostRec::poll_send:
        case HostRec::post_recv:
        case HostRec::poll_recv:
            // The data path runs on one of two worker threads, by connection.
            return pid + 1 + (qps_[qp_of(r)].conn & 1);
        default:
            return pid;
    }
}

const char* HostTrace::comm(uint32_t proc) const {
    return HostLayout::kProcessNames[process(proc).comm];
}

uint64_t HostTrace::cgroup(uint32_t proc) const {
    // cgroup v2 ids are directory inode numbers: one directory per tenant.
    return 4026531840ull + 7919ull * process(proc).tenant;
}

std::string HostTrace::cgroup_path(uint32_t proc) const {
    return "/insert-gen/tenant-" + std::to_string(process(proc).tenant);
}

uint64_t HostTrace::ctx(uint32_t proc) const {
    return 0x55A000000000ull + 0x40000000ull * (proc % 1024) + 0x2A0;
}

uint64_t HostTrace::mr_ptr(uint32_t mr) const {
    const uint32_t proc = layout_.mrs()[mr].proc;
    const uint32_t k =
        mr - static_cast<uint32_t>(layout_.mrs_of(proc).data() - layout_.mrs().data());
    return ctx(proc) + 0x30000 + 0x80ull * k;
}

uint32_t HostTrace::open_mrs(uint32_t proc) const {
    return process(proc).exits_without_destroy ? static_cast<uint32_t>(layout_.mrs_of(proc).size())
                                               : 0;
}

void HostTrace::prefetch(const HostRecord& r) const {
    switch (r.kind) {
        case HostRec::post_send:
        case HostRec::poll_send:
        case HostRec::post_recv:
        case HostRec::poll_recv:
            __builtin_prefetch(&sim_.messages()[r.ref]);
            if (r.kind == HostRec::poll_send) __builtin_prefetch(&sim_.host_events()[r.ref]);
            break;
        default:
            break;
    }
}

int64_t HostTrace::true_ns(const HostRecord& r) const {
    return r.wall_ns - static_cast<int64_t>(kEpochNs) - hosts_[r.host].theta_ns;
}

WorkRequest HostTrace::work_request(const HostRecord& r) const {
    const MsgInfo& m = sim_.messages()[r.ref];
    const HostQp& q = qps_[m.conn * 2];
    WorkRequest w;
    w.wr_id = q.wr_base + (m.index % kWrSlots) * 64;
    w.signaled = (r.flags & kSignaled) != 0;
    w.len = m.len;
    bool rdma = true;
    switch (m.op) {
        case OpType::send:
            w.opcode = m.imm   ? WrOpcode::send_with_imm
                       : m.inv ? WrOpcode::send_with_inv
                               : WrOpcode::send;
            rdma = false;
            break;
        case OpType::write:
            w.opcode = m.imm ? WrOpcode::rdma_write_with_imm : WrOpcode::rdma_write;
            break;
        case OpType::read:
            w.opcode = WrOpcode::rdma_read;
            break;
        case OpType::cmp_swap:
            w.opcode = WrOpcode::atomic_cmp_and_swp;
            break;
        case OpType::fetch_add:
            w.opcode = WrOpcode::atomic_fetch_and_add;
            break;
    }
    // IBV_SEND_SIGNALED; IBV_SEND_SOLICITED on SENDs (the simulator sets BTH.SE on their Last).
    w.send_flags = (w.signaled ? 2u : 0u) | (m.op == OpType::send ? 4u : 0u);
    if (rdma) {
        w.remote_addr = m.va;
        w.rkey = m.rkey;
    }
    if (m.imm) w.imm = m.imm_value;
    return w;
}

Completion HostTrace::completion(const HostRecord& r) const {
    const MsgInfo& m = sim_.messages()[r.ref];
    Completion c;
    if (r.kind == HostRec::poll_recv) {
        // The receive it consumed: the aux-th posted one (FIFO).
        c.wr_id = qps_[m.conn * 2 + 1].wr_base + 0x100000 + (r.aux % kRecvSlots) * 64;
        c.opcode = m.op == OpType::send ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
        c.byte_len = m.len;
        if (m.imm) c.imm = m.imm_value;
        c.wc_flags = m.imm ? 2u : m.inv ? 8u : 0u;  // IBV_WC_WITH_IMM, IBV_WC_WITH_INV
        return c;
    }
    c.wr_id = work_request(r).wr_id;
    c.status = sim_.host_events()[r.ref].status;
    static constexpr WcOpcode kOps[] = {WcOpcode::send, WcOpcode::rdma_write, WcOpcode::rdma_read,
                                        WcOpcode::comp_swap, WcOpcode::fetch_add};
    c.opcode = kOps[static_cast<int>(m.op)];
    c.byte_len = m.op == OpType::read                                      ? m.len
                 : (m.op == OpType::cmp_swap || m.op == OpType::fetch_add) ? 8
                                                                           : 0;
    return c;
}

uint64_t HostTrace::recv_wr_id(const HostRecord& r) const {
    const MsgInfo& m = sim_.messages()[r.ref];
    return qps_[m.conn * 2 + 1].wr_base + 0x100000 + (r.aux % kRecvSlots) * 64;
}

}  // namespace insert::gen
