#include "bench/gen/alert_truth.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace insert::gen {

namespace {

constexpr std::size_t kMaxRkeys = 16;  // section 8: `rkeys` lists the first 16
// Section 8 `injected_message`: no trace loss reported within 1 s of the message.
constexpr int64_t kLossWindowNs = 1'000'000'000;

bool is_rkey_kind(AlertKind k) {
    return k <= AlertKind::access_denied;
}

// Adds `o` to an alert being built: count, last time, packets, distinct rkeys.
void absorb(AlertRecord& a, const Offence& o, std::vector<uint32_t>& all_rkeys) {
    ++a.count;
    a.t_last_ns = o.t_ns;
    a.claimed = a.claimed || o.claimed;
    a.pkts += o.pkts;
    if (o.rkey && std::find(all_rkeys.begin(), all_rkeys.end(), *o.rkey) == all_rkeys.end()) {
        all_rkeys.push_back(*o.rkey);
        if (a.rkeys.size() < kMaxRkeys) a.rkeys.push_back(*o.rkey);
    }
    a.distinct_rkeys = all_rkeys.size();
}

AlertRecord start(AlertKind kind, const Offence& first) {
    AlertRecord a;
    a.kind = kind;
    a.t_ns = first.t_ns;
    a.first = first;
    a.victims = 1;
    return a;
}

}  // namespace

const char* alert_kind_name(AlertKind k) {
    static constexpr const char* kNames[] = {"rkey_unknown",  "rkey_stale",      "out_of_bounds",
                                             "access_denied", "rkey_scan",       "unowned_qp",
                                             "peer_mismatch", "injected_message"};
    return kNames[static_cast<int>(k)];
}

const char* alert_severity(AlertKind k) {
    const bool critical = k == AlertKind::rkey_scan || k == AlertKind::peer_mismatch ||
                          k == AlertKind::injected_message;
    return critical ? "critical" : "warning";
}

std::vector<AlertRecord> aggregate_alerts(std::span<const Offence> offences,
                                          const AlertOptions& opt) {
    std::vector<AlertRecord> out;
    // Offences of one kind, victim (address, QPN, incarnation) and source IP, by time
    // (ties: in the order of the messages); consecutive ones less than the gap apart are one
    // alert.
    std::vector<const Offence*> sorted;
    for (const Offence& o : offences) sorted.push_back(&o);
    auto group = [](const Offence& o) {
        return std::make_tuple(o.kind, o.victim_ip, o.victim_qpn, o.victim_inc, o.src_ip);
    };
    std::stable_sort(sorted.begin(), sorted.end(), [&](const Offence* a, const Offence* b) {
        return std::make_tuple(group(*a), a->t_ns, a->msg) <
               std::make_tuple(group(*b), b->t_ns, b->msg);
    });
    std::vector<uint32_t> rkeys;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        const Offence& o = *sorted[i];
        const bool next = i == 0 || group(*sorted[i - 1]) != group(o) ||
                          o.t_ns - sorted[i - 1]->t_ns >= opt.gap_ns;
        if (next) {
            out.push_back(start(o.kind, o));
            rkeys.clear();
        }
        absorb(out.back(), o, rkeys);
    }
    // rkey_scan: per source IP, its rkey offences (any victim) by time, cut into episodes
    // where consecutive ones are less than the window apart; an episode in which some window
    // of that length holds `threshold` offences raises one, at the time the threshold was
    // reached.
    std::vector<const Offence*> rk;
    for (const Offence& o : offences)
        if (is_rkey_kind(o.kind)) rk.push_back(&o);
    std::stable_sort(rk.begin(), rk.end(), [](const Offence* a, const Offence* b) {
        return std::make_tuple(a->src_ip, a->t_ns, a->msg) <
               std::make_tuple(b->src_ip, b->t_ns, b->msg);
    });
    for (std::size_t i = 0; i < rk.size();) {
        std::size_t j = i + 1;
        while (j < rk.size() && rk[j]->src_ip == rk[i]->src_ip &&
               rk[j]->t_ns - rk[j - 1]->t_ns < opt.scan_window_ns)
            ++j;
        // Episode [i, j): the threshold is reached at the first offence whose window (it
        // and the threshold - 1 before it) spans less than the window.
        const std::size_t need = opt.scan_threshold == 0 ? 1 : opt.scan_threshold;
        std::optional<uint64_t> reached;
        for (std::size_t e = i + need - 1; e < j && !reached; ++e)
            if (rk[e]->t_ns - rk[e + 1 - need]->t_ns < opt.scan_window_ns) reached = rk[e]->t_ns;
        if (reached) {
            AlertRecord a = start(AlertKind::rkey_scan, *rk[i]);
            a.t_ns = *reached;
            rkeys.clear();
            std::vector<std::tuple<uint16_t, uint32_t, uint32_t>> victims;
            for (std::size_t e = i; e < j; ++e) {
                absorb(a, *rk[e], rkeys);
                const auto v =
                    std::make_tuple(rk[e]->victim_ip, rk[e]->victim_qpn, rk[e]->victim_inc);
                if (std::find(victims.begin(), victims.end(), v) == victims.end())
                    victims.push_back(v);
            }
            a.victims = victims.size();
            out.push_back(std::move(a));
        }
        i = j;
    }
    std::stable_sort(out.begin(), out.end(), [](const AlertRecord& a, const AlertRecord& b) {
        return std::make_pair(a.t_ns, std::string_view(alert_kind_name(a.kind))) <
               std::make_pair(b.t_ns, std::string_view(alert_kind_name(b.kind)));
    });
    return out;
}

AlertTruth::AlertTruth(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
                       const AlertOptions& opt)
    : sc_(sc), trace_(trace), e2e_(e2e) {
    read_trace();
    for (uint32_t k = 0; k < e2e_.joined_msgs().size(); ++k) check(k);
    alerts_ = aggregate_alerts(offences_, opt);
    // Section 8 "Records": by (t_ns, kind, victim, source): ties after time and kind by
    // the victim's address and QPN, then the source address.
    const auto& hosts = sc_.hosts;
    std::stable_sort(alerts_.begin(), alerts_.end(),
                     [&](const AlertRecord& a, const AlertRecord& b) {
                         return std::make_tuple(a.t_ns, std::string_view(alert_kind_name(a.kind)),
                                                hosts[a.first.victim_ip].ip, a.first.victim_qpn,
                                                hosts[a.first.src_ip].ip) <
                                std::make_tuple(b.t_ns, std::string_view(alert_kind_name(b.kind)),
                                                hosts[b.first.victim_ip].ip, b.first.victim_qpn,
                                                hosts[b.first.src_ip].ip);
                     });
}

std::array<uint64_t, kAlertKinds> AlertTruth::counts() const {
    std::array<uint64_t, kAlertKinds> n{};
    for (const AlertRecord& a : alerts_) ++n[static_cast<int>(a.kind)];
    return n;
}

// Section 2's MRs (reg_mr of (host, pid), alive until its dereg_mr - same `mr` - or the
// process's exit), each host's earliest record, and its `lost` records.
void AlertTruth::read_trace() {
    mrs_.assign(trace_.layout().processes().size(), {});
    first_record_.assign(sc_.hosts.size(), INT64_MAX);
    lost_.assign(sc_.hosts.size(), {});
    for (const HostRecord& r : trace_.records()) {
        // trace_start carries no wall_ns: "its earliest record" is of the others (reading).
        if (r.kind != HostRec::trace_start)
            first_record_[r.host] = std::min(first_record_[r.host], r.wall_ns);
        switch (r.kind) {
            case HostRec::reg_mr: {
                const HostMr& mr = trace_.layout().mrs()[r.ref];
                MrLife life;
                life.ptr = trace_.mr_ptr(r.ref);
                life.pd = trace_.pd(r.proc);
                life.addr = mr.addr;  // iova == addr (ibv_reg_mr)
                life.length = mr.length;
                life.access = mr.access;
                life.rkey = mr.rkey;
                life.t_reg = r.wall_ns;
                mrs_[r.proc].push_back(life);
                break;
            }
            case HostRec::dereg_mr: {
                const uint64_t ptr = trace_.mr_ptr(r.ref);
                for (MrLife& m : mrs_[r.proc])
                    if (m.ptr == ptr && m.t_end == INT64_MAX) {
                        m.t_end = r.wall_ns;
                        break;
                    }
                break;
            }
            case HostRec::process_exit:
                for (MrLife& m : mrs_[r.proc]) m.t_end = std::min(m.t_end, r.wall_ns);
                break;
            case HostRec::lost:
                lost_[r.host].push_back(r.wall_ns);
                break;
            default:
                break;
        }
    }
}

// Section 8: the target is the responder incarnation alive at t_first_ns shifted by its
// host's offset (the time rule's "latest created before" does not count).
std::optional<uint32_t> AlertTruth::live_target(const TruthMsg& m) const {
    std::optional<uint32_t> alive;
    const auto& incs = e2e_.incarnations();
    for (uint32_t c : e2e_.incarnations_at(m.dst_host, m.dst_qpn)) {
        const Incarnation& q = incs[c];
        const int64_t t = static_cast<int64_t>(m.t_first_ns) + e2e_.theta()[q.host];
        if (q.t_create <= t && t < q.t_end && (!alive || incs[*alive].t_create < q.t_create))
            alive = c;
    }
    return alive;
}

// Section 8 WRITE, READ, atomics: the MRs of the target's process in the target's PD with
// the message's rkey decide.
std::optional<AlertKind> AlertTruth::rkey_offence(const TruthMsg& m,
                                                  const Incarnation& target) const {
    if (m.op == OpType::send || !m.rkey || !m.va) return std::nullopt;
    const int64_t t = static_cast<int64_t>(m.t_first_ns) + e2e_.theta()[target.host];
    const MrLife* alive = nullptr;
    bool retired = false;
    for (const MrLife& mr : mrs_[target.proc]) {
        if (mr.pd != target.pd || mr.rkey != *m.rkey) continue;
        if (mr.t_reg <= t && t < mr.t_end) {
            if (!alive || alive->t_reg < mr.t_reg) alive = &mr;
        } else if (mr.t_end <= t) {
            retired = true;
        }
    }
    // None alive: deregistered before -> stale; never registered (by then) -> unknown.
    if (!alive) return retired ? AlertKind::rkey_stale : AlertKind::rkey_unknown;
    // length: dma_len, else bytes; 8 for atomics. [va, va + length) inside the MR.
    const bool atomic = m.op == OpType::cmp_swap || m.op == OpType::fetch_add;
    const uint64_t length = atomic ? 8 : m.dma_len ? *m.dma_len : m.bytes;
    const uint64_t va = *m.va;
    if (va < alive->addr || va - alive->addr > alive->length ||
        length > alive->length - (va - alive->addr))
        return AlertKind::out_of_bounds;
    const uint32_t need = access_needed(m.op);
    if ((alive->access & need) != need || (target.qp_access & need) != need)
        return AlertKind::access_denied;
    return std::nullopt;
}

bool AlertTruth::lost_near(uint16_t host, int64_t t) const {
    const std::vector<int64_t>& l = lost_[host];
    const auto it = std::lower_bound(l.begin(), l.end(), t - kLossWindowNs);
    return it != l.end() && *it <= t + kLossWindowNs;
}

void AlertTruth::check(uint32_t k) {
    const TruthMsg& m = *e2e_.joined_msgs()[k];
    const MsgJoin& j = e2e_.msg_join()[k];
    Offence o;
    o.t_ns = m.t_first_ns;
    o.msg = k;
    o.victim_ip = m.dst_host;
    o.victim_qpn = m.dst_qpn;
    o.src_ip = m.src_host;
    o.rkey = m.rkey;
    o.pkts = m.pkts;
    o.claimed = !j.matched;
    const std::optional<uint32_t> target = live_target(m);
    if (!target) {
        // unowned_qp: dst_ip is a traced host's, whose trace had begun by then.
        const int64_t t = static_cast<int64_t>(m.t_first_ns) + e2e_.theta()[m.dst_host];
        if (e2e_.traced_ip(m.dst_host) && first_record_[m.dst_host] <= t) {
            o.kind = AlertKind::unowned_qp;
            offences_.push_back(o);
        }
        return;
    }
    const Incarnation& q = e2e_.incarnations()[*target];
    o.victim_inc = *target;
    if (q.peer_ip && *q.peer_ip != m.src_host) {
        Offence spoofed = o;
        spoofed.kind = AlertKind::peer_mismatch;
        spoofed.claimed = true;
        offences_.push_back(spoofed);
    }
    if (const std::optional<AlertKind> kind = rkey_offence(m, q)) {
        o.kind = *kind;
        offences_.push_back(o);
    }
    if (j.wire_only_after_match && j.req) {  // whatever its status (v1.3)
        const Incarnation& r = e2e_.incarnations()[*j.req];
        const int64_t t = static_cast<int64_t>(m.t_first_ns) + e2e_.theta()[r.host];
        if (!lost_near(r.host, t)) {
            o.kind = AlertKind::injected_message;
            o.claimed = true;
            offences_.push_back(o);
        }
    }
}

}  // namespace insert::gen
