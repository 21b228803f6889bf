#include "correlator/usecases/security.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>

#include "correlator/input/host_names.hpp"
#include "correlator/join/qp_index.hpp"

namespace insert::correlate {

namespace {

uint32_t right_needed(Op op) {
    switch (op) {
        case Op::write:
            return kAccessRemoteWrite;
        case Op::read:
            return kAccessRemoteRead;
        case Op::cmp_swap:
        case Op::fetch_add:
            return kAccessRemoteAtomic;
        default:
            return 0;
    }
}

class MrIndex {
  public:
    explicit MrIndex(const HostModel& model) : model_(model) {
        for (uint32_t p = 0; p < model.processes.size(); ++p)
            for (uint32_t k = 0; k < model.processes[p].mrs.size(); ++k)
                by_key_[key(p, model.processes[p].mrs[k].rkey)].push_back(k);
    }
    const std::vector<uint32_t>* find(uint32_t process, uint32_t rkey) const {
        const auto it = by_key_.find(key(process, rkey));
        return it == by_key_.end() ? nullptr : &it->second;
    }

  private:
    static uint64_t key(uint32_t process, uint32_t rkey) {
        return (uint64_t{process} << 32) | rkey;
    }
    const HostModel& model_;
    std::unordered_map<uint64_t, std::vector<uint32_t>> by_key_;
};

bool lost_near(const HostModel& model, uint32_t host, int64_t t, int64_t guard) {
    if (host >= model.lost_at.size()) return false;
    const auto& times = model.lost_at[host];
    const auto it = std::lower_bound(times.begin(), times.end(), t - guard);
    return it != times.end() && *it <= t + guard;
}

// The region the message's rkey names in the target's protection domain, at time `t` of
// the target's host.
RegionLookup region_lookup(const WireMsg& m, const Incarnation& target, const HostModel& model,
                           const MrIndex& mrs, int64_t t) {
    RegionLookup found;
    found.right = right_needed(m.op);
    found.needs_region = found.right != 0;
    if (!found.needs_region || m.rkey == kNone) return found;
    const auto* candidates = mrs.find(target.process, static_cast<uint32_t>(m.rkey));
    if (!candidates) return found;
    const Process& owner = model.processes[target.process];
    for (uint32_t k : *candidates) {
        const MemoryRegion& mr = owner.mrs[k];
        if (mr.pd != target.pd) continue;
        if (mr.t_reg <= t && t < mr.t_dereg)
            found.live = &mr;
        else if (mr.t_dereg <= t)
            found.deregistered_before = true;
    }
    return found;
}

// The offence is made only when there is one: nearly every message has none, and copying
// each message and its owners' names was a twentieth of a batch run.
Offence offence(AlertKind kind, const RuleInput& in, const HostNames& names) {
    Offence o;
    o.kind = kind;
    o.t = in.msg.t_first;
    o.msg = in.msg;
    o.victim_ip = in.msg.dst_ip;
    o.victim_qpn = in.msg.dst_qpn;
    o.source_ip = in.msg.src_ip;
    o.source_qpn = in.msg.src_qpn;
    if (in.source) {
        o.source = qp_owner(*in.source, names);
        if (o.source_qpn == kNone) o.source_qpn = in.source->qpn;
    }
    if (in.target) {
        o.victim_created = in.target->t_create;
        o.victim = qp_owner(*in.target, names);
    }
    return o;
}

auto victim_key(const Offence& o) {
    return std::make_tuple(o.victim_ip.bytes, o.victim_qpn, o.victim_created);
}

void add_rkey(Alert& a, const WireMsg& m) {
    if (m.rkey == kNone) return;
    const auto rkey = static_cast<uint32_t>(m.rkey);
    if (std::find(a.rkeys.begin(), a.rkeys.end(), rkey) != a.rkeys.end()) return;
    if (a.rkeys.size() < 16) a.rkeys.push_back(rkey);
}

Alert start_alert(AlertKind kind, const Offence& o) {
    Alert a;
    a.kind = kind;
    a.t_ns = a.t_last_ns = o.t;
    a.first = o;
    a.first.kind = kind;
    return a;
}

}  // namespace

std::vector<Offence> find_offences(const WireMsgs& msgs, const JoinResult& join,
                                   const HostModel& model, const HostNames& names,
                                   const SecurityOptions& options, const std::vector<bool>* only) {
    const QpIndex index(model);
    const MrIndex mrs(model);
    const auto theta = [&](uint32_t host) {
        return host < join.clocks.size() ? join.clocks[host].offset : 0;
    };
    std::vector<Offence> offences;
    for (uint32_t i = 0; i < msgs.size(); ++i) {
        if (only && !(*only)[i]) continue;
        const WireMsg& m = msgs[i];
        const int64_t requester = join.requester[i];
        const int64_t r = join.responder[i];
        RuleInput in{m};
        in.wire = join.wire[i];
        if (requester >= 0) in.source = &model.qps[static_cast<std::size_t>(requester)];
        if (r >= 0) {
            const Incarnation& q = model.qps[static_cast<std::size_t>(r)];
            if (q.alive_at(m.t_first + theta(q.host))) in.target = &q;
        }
        if (in.target) {
            in.region =
                region_lookup(m, *in.target, model, mrs, m.t_first + theta(in.target->host));
            if (in.wire == WireState::wire_only_covered && in.source)
                in.source_lost_records =
                    lost_near(model, in.source->host, m.t_first + theta(in.source->host),
                              options.lost_guard_ns);
        } else {
            const int64_t host = index.host_of(m.dst_ip);
            in.target_host_tracing =
                host >= 0 && model.first_record[static_cast<std::size_t>(host)] <=
                                 m.t_first + theta(static_cast<uint32_t>(host));
        }
        for (const SecurityRule& rule : security_rules())
            if (rule.offends && rule.offends(in)) offences.push_back(offence(rule.kind, in, names));
    }

    return offences;
}

std::vector<Alert> aggregate_alerts(std::vector<Offence> offences, const SecurityOptions& options) {
    // One alert per episode of one kind, victim and source.
    std::sort(offences.begin(), offences.end(), [](const Offence& a, const Offence& b) {
        return std::make_tuple(a.kind, victim_key(a), a.source_ip.bytes, a.t, a.msg.psn_first) <
               std::make_tuple(b.kind, victim_key(b), b.source_ip.bytes, b.t, b.msg.psn_first);
    });
    std::vector<Alert> alerts;
    for (std::size_t i = 0; i < offences.size(); ++i) {
        const Offence& o = offences[i];
        const bool joins = !alerts.empty() && i > 0 && offences[i - 1].kind == o.kind &&
                           victim_key(offences[i - 1]) == victim_key(o) &&
                           offences[i - 1].source_ip == o.source_ip &&
                           o.t - offences[i - 1].t < options.alert_gap_ns;
        if (!joins) alerts.push_back(start_alert(o.kind, o));
        Alert& a = alerts.back();
        a.t_last_ns = o.t;
        ++a.count;
        a.pkts += o.msg.pkts;
        add_rkey(a, o.msg);
    }
    for (Alert& a : alerts) a.distinct_rkeys = a.rkeys.size();

    // rkey_scan: one source's rkey/access offences, episodes of gaps < the window, raised
    // when some window of the episode holds the threshold.
    std::vector<Offence> scan;
    for (const Offence& o : offences)
        if (security_rule(o.kind).feeds_scan) scan.push_back(o);
    std::sort(scan.begin(), scan.end(), [](const Offence& a, const Offence& b) {
        return std::make_tuple(a.source_ip.bytes, a.t, a.msg.psn_first, victim_key(a)) <
               std::make_tuple(b.source_ip.bytes, b.t, b.msg.psn_first, victim_key(b));
    });
    for (std::size_t begin = 0; begin < scan.size();) {
        std::size_t end = begin + 1;
        while (end < scan.size() && scan[end].source_ip == scan[begin].source_ip &&
               scan[end].t - scan[end - 1].t < options.scan_window_ns)
            ++end;
        int64_t reached = kNone;
        for (std::size_t lo = begin, hi = begin; hi < end; ++hi) {
            while (scan[hi].t - scan[lo].t >= options.scan_window_ns) ++lo;
            if (hi - lo + 1 >= options.scan_threshold) {
                reached = scan[hi].t;
                break;
            }
        }
        if (reached != kNone) {
            Alert a = start_alert(AlertKind::rkey_scan, scan[begin]);
            a.t_ns = reached;
            a.t_last_ns = scan[end - 1].t;
            a.count = end - begin;
            std::set<std::tuple<std::array<uint8_t, 16>, uint32_t, int64_t>> victims;
            std::set<uint32_t> rkeys;
            for (std::size_t k = begin; k < end; ++k) {
                victims.insert(victim_key(scan[k]));
                a.pkts += scan[k].msg.pkts;
                if (scan[k].msg.rkey != kNone)
                    rkeys.insert(static_cast<uint32_t>(scan[k].msg.rkey));
                add_rkey(a, scan[k].msg);
            }
            a.victims = victims.size();
            a.distinct_rkeys = rkeys.size();
            alerts.push_back(a);
        }
        begin = end;
    }
    std::sort(alerts.begin(), alerts.end(), [](const Alert& a, const Alert& b) {
        return std::make_tuple(a.t_ns, a.kind, a.first.victim_ip.bytes, a.first.victim_qpn,
                               a.first.source_ip.bytes) <
               std::make_tuple(b.t_ns, b.kind, b.first.victim_ip.bytes, b.first.victim_qpn,
                               b.first.source_ip.bytes);
    });
    return alerts;
}

}  // namespace insert::correlate
