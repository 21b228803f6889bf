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
    o.claimed = in.wire != WireState::matched || kind == AlertKind::peer_mismatch ||
                kind == AlertKind::injected_message;
    return o;
}

}  // namespace

std::vector<Offence> find_offences(const WireMsgs& msgs, const JoinResult& join,
                                   const HostModel& model, const HostNames& names,
                                   const SecurityOptions& options, const std::vector<bool>* only,
                                   RuleSet rules) {
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
        RuleInput in(m);
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
            if (rule.offends && (rules & rule_bit(rule.kind)) && rule.offends(in))
                offences.push_back(offence(rule.kind, in, names));
    }

    return offences;
}

void attach_origins(std::vector<Offence>& offences, const WireMsgs& msgs, const JoinResult& join) {
    OriginFeed feed;
    std::unordered_map<Ip, bool, IpHash> asked;  // the addresses offences claim
    std::unordered_map<uint64_t, Offence*> by_query;
    for (Offence& o : offences) {
        if (!wants_origin(o.kind)) continue;
        o.origin = compare_origin(o.msg.origin, std::nullopt);
        if (!o.msg.origin.known) continue;  // an older insert-dp's record: null
        by_query[feed.add_query(o.msg)] = &o;
        asked[o.msg.src_ip] = true;
    }
    if (by_query.empty()) return;
    for (std::size_t i = 0; i < msgs.size(); ++i)
        if (msgs[i].origin.known && asked.count(msgs[i].src_ip))
            feed.add_message(OriginNote::of(msgs[i], join.wire[i] == WireState::matched));
    for (auto& [query, evidence] : feed.advance([](const Ip&) { return INT64_MAX; }))
        by_query[query]->origin = evidence;
}

}  // namespace insert::correlate
