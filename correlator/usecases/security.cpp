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

// Bytes of target memory the request touches: the RETH length, or 8 for atomics.
uint64_t access_length(const WireMsg& m) {
    if (m.op == Op::cmp_swap || m.op == Op::fetch_add) return 8;
    return m.dma_len != kNone ? static_cast<uint64_t>(m.dma_len) : m.bytes;
}

bool in_bounds(const WireMsg& m, const MemoryRegion& mr) {
    if (m.va == kNone) return false;
    const auto va = static_cast<uint64_t>(m.va);
    const uint64_t len = access_length(m);
    return va >= mr.addr && len <= mr.length && va - mr.addr <= mr.length - len;
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

std::string_view alert_kind_name(AlertKind k) {
    static constexpr std::string_view kNames[] = {
        "rkey_unknown", "rkey_stale", "out_of_bounds", "access_denied",
        "rkey_scan",    "unowned_qp", "peer_mismatch", "injected_message"};
    return k < AlertKind::count ? kNames[static_cast<std::size_t>(k)] : "unknown";
}

std::string_view alert_severity(AlertKind k) {
    switch (k) {
        case AlertKind::rkey_scan:
        case AlertKind::peer_mismatch:
        case AlertKind::injected_message:
            return "critical";
        default:
            return "warning";
    }
}

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
        const bool owned =
            r >= 0 && model.qps[static_cast<std::size_t>(r)].alive_at(
                          m.t_first + theta(model.qps[static_cast<std::size_t>(r)].host));
        // The offence is written only when there is one: nearly every message has none, and
        // copying each message and its owners' names was a twentieth of a batch run.
        const auto offend = [&](AlertKind kind) {
            Offence& o = offences.emplace_back();
            o.kind = kind;
            o.t = m.t_first;
            o.msg = m;
            o.victim_ip = m.dst_ip;
            o.victim_qpn = m.dst_qpn;
            o.source_ip = m.src_ip;
            o.source_qpn = m.src_qpn;
            if (requester >= 0) {
                const Incarnation& src = model.qps[static_cast<std::size_t>(requester)];
                o.source = qp_owner(src, names);
                if (o.source_qpn == kNone) o.source_qpn = src.qpn;
            }
            if (owned) {
                const Incarnation& target = model.qps[static_cast<std::size_t>(r)];
                o.victim_created = target.t_create;
                o.victim = qp_owner(target, names);
            }
        };
        if (!owned) {
            // unowned_qp: a traced host whose trace had begun, and no live QP with this QPN.
            const int64_t host = index.host_of(m.dst_ip);
            if (host >= 0 && model.first_record[static_cast<std::size_t>(host)] <=
                                 m.t_first + theta(static_cast<uint32_t>(host)))
                offend(AlertKind::unowned_qp);
            continue;
        }
        const Incarnation& target = model.qps[static_cast<std::size_t>(r)];
        if (target.has_peer && !(m.src_ip == target.peer_ip)) offend(AlertKind::peer_mismatch);
        if (const uint32_t need = right_needed(m.op)) {
            const int64_t t = m.t_first + theta(target.host);
            const Process& owner = model.processes[target.process];
            const MemoryRegion* live = nullptr;
            bool stale = false;
            if (m.rkey != kNone)
                if (const auto* found = mrs.find(target.process, static_cast<uint32_t>(m.rkey)))
                    for (uint32_t k : *found) {
                        const MemoryRegion& mr = owner.mrs[k];
                        if (mr.pd != target.pd) continue;
                        if (mr.t_reg <= t && t < mr.t_dereg)
                            live = &mr;
                        else if (mr.t_dereg <= t)
                            stale = true;
                    }
            AlertKind kind = AlertKind::count;
            if (!live)
                kind = stale ? AlertKind::rkey_stale : AlertKind::rkey_unknown;
            else if (!in_bounds(m, *live))
                kind = AlertKind::out_of_bounds;
            else if (!(live->access & need) || (target.has_access && !(target.qp_access & need)))
                kind = AlertKind::access_denied;
            if (kind != AlertKind::count) offend(kind);
        }
        // A message that did not complete (`incomplete`, NAKed) may be a posted one whose
        // packets the observer partly missed, so its bytes disagree with the request:
        // only a complete, accepted message no one posted is injected.
        if (join.wire[i] == WireState::wire_only_covered && m.status == MsgStatus::ok) {
            const Incarnation& src = model.qps[static_cast<std::size_t>(requester)];
            if (!lost_near(model, src.host, m.t_first + theta(src.host), options.lost_guard_ns))
                offend(AlertKind::injected_message);
        }
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
        if (o.kind <= AlertKind::access_denied) scan.push_back(o);
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
