#include "correlator/output/views.hpp"

#include <algorithm>
#include <tuple>

#include "correlator/input/host_names.hpp"
#include "correlator/join/qp_index.hpp"
#include "dataplane/common/hash.hpp"

namespace insert::correlate {

namespace {

int64_t sub_or_none(int64_t a, int64_t b) {
    return a == kNone || b == kNone ? kNone : a - b;
}

}  // namespace

E2eRow make_e2e_row(const JoinResult& join, const HostModel& model, const WireMsgs& msgs,
                    const E2eMatch& match) {
    E2eRow r;
    r.msg = &msgs[match.msg];
    r.requester = &model.qps[match.qp];
    r.wr = &r.requester->wrs[match.wr];
    r.resync = match.resync;
    const int64_t responder = join.responder[match.msg];
    if (responder >= 0) r.responder = &model.qps[static_cast<std::size_t>(responder)];
    const int64_t theta = join.clocks[r.requester->host].offset;
    r.t_post = r.wr->wall - theta;
    r.t_poll = sub_or_none(r.wr->t_poll, theta);
    r.t_covered = sub_or_none(r.wr->t_covered, theta);
    if (r.responder && join.t_recv_poll[match.msg] != kNone)
        r.t_recv_poll = join.t_recv_poll[match.msg] - join.clocks[r.responder->host].offset;
    // SPEC 10 latency split: host + net + completion == total, all in observer ns.
    r.host_ns = r.msg->t_first - r.t_post;
    r.net_ns = sub_or_none(r.msg->t_ack, r.msg->t_first);
    r.completion_ns = sub_or_none(r.t_poll, r.msg->t_ack);
    r.total_ns = sub_or_none(r.wr->t_poll, r.wr->wall);
    return r;
}

void prefetch_e2e_row(const JoinResult& join, const HostModel& model, const WireMsgs& msgs,
                      const E2eMatch& match) {
    const auto* msg = reinterpret_cast<const char*>(&msgs[match.msg]);
    __builtin_prefetch(msg);
    __builtin_prefetch(msg + sizeof(WireMsg) - 1);
    __builtin_prefetch(&model.qps[match.qp].wrs[match.wr]);
    __builtin_prefetch(&join.responder[match.msg]);
    __builtin_prefetch(&join.t_recv_poll[match.msg]);
}

std::vector<E2eRow> make_e2e_rows(const JoinResult& join, const HostModel& model,
                                  const WireMsgs& msgs) {
    std::vector<E2eRow> rows;
    rows.reserve(join.matches.size());
    for (const E2eMatch& match : join.matches)
        rows.push_back(make_e2e_row(join, model, msgs, match));
    return rows;
}

AppAggregator::Entry& AppAggregator::entry(const Incarnation& q, const HostNames& names) {
    const KeyView key{names.view(q.host), q.ip.bytes, q.pid, q.comm.view(), q.cgroup};
    auto at = apps_.find(key);
    if (at == apps_.end()) {  // a new application: its key's names are copied once
        Key owned{std::string(names.view(q.host)), q.ip.bytes, q.pid, std::string(q.comm.view()),
                  q.cgroup};
        at = apps_.emplace(std::move(owned), Entry{}).first;
    }
    Entry& e = at->second;
    if (!e.named) {
        e.named = true;
        e.view.host = names.name(q.host);
        e.view.ip = q.ip;
        e.view.pid = q.pid;
        e.view.comm = q.comm;
        e.view.cgroup = q.cgroup;
    }
    return e;
}

std::size_t AppAggregator::MatchedHash::operator()(const Matched& m) const {
    uint64_t h = common::mix64((uint64_t{m.host} << 32) ^ static_cast<uint32_t>(m.pid));
    for (const uint64_t word : {m.qp_obj, static_cast<uint64_t>(m.t_create), m.cgroup})
        h = common::mix64(h ^ word);
    return h ^ hash_ip(m.ip);
}

void AppAggregator::add_row(const E2eRow& r, const HostNames& names) {
    const Incarnation& q = *r.requester;
    const Matched key{q.host, q.pid, q.qp_obj, q.t_create, q.ip, q.comm, q.cgroup};
    Recent& seen = recent(q);
    if (seen.q != &q || !(seen.key == key)) {
        auto [at, first] = matched_.try_emplace(key, nullptr);
        if (first) {  // the incarnation's first match: its application counts one QP more
            Entry& fresh = entry(q, names);
            fresh.has_e2e = true;
            ++fresh.view.qps;
            ++fresh.matched_refs;
            at->second = &fresh;
        }
        seen = Recent{&q, key, at->second};
    }
    AppView& app = seen.entry->view;
    const auto op = static_cast<std::size_t>(r.msg->op);
    ++app.msgs[op];
    app.bytes[op] += r.wr->len;
    if (r.host_ns != kNone) app.host_ns.add(r.host_ns);
    if (r.net_ns != kNone) app.net_ns.add(r.net_ns);
    // What the application saw complete: signaled requests only (an unsignaled one that
    // failed has a completion too, but is not what the application waits for).
    if (r.wr->signaled) {
        ++app.signaled_wrs;
        if (r.completion_ns != kNone) app.completion_ns.add(r.completion_ns);
        if (r.total_ns != kNone) app.total_ns.add(r.total_ns);
    }
    app.retx_pkts += r.msg->retx_pkts;
    app.naks += r.msg->naks;
}

void AppAggregator::add_unmatched(const Incarnation& q, uint64_t n, const HostNames& names) {
    if (n == 0 || !q.has_ip) return;
    entry(q, names).view.unmatched_wr += n;
}

void AppAggregator::add_counters(const Incarnation& q, uint64_t cnps, uint64_t ecn_ce,
                                 uint64_t ecn_ce_caused, const HostNames& names) {
    if (!q.has_ip || (cnps | ecn_ce | ecn_ce_caused) == 0) return;
    AppView& app = entry(q, names).view;
    app.cnps += cnps;
    app.ecn_ce += ecn_ce;
    app.ecn_ce_caused += ecn_ce_caused;
}

void AppAggregator::forget(const Incarnation& q) {
    const auto at =
        matched_.find(Matched{q.host, q.pid, q.qp_obj, q.t_create, q.ip, q.comm, q.cgroup});
    if (at == matched_.end()) return;
    --at->second->matched_refs;
    matched_.erase(at);
    forget_recent();
}

void AppAggregator::retire_process(uint32_t host, int32_t pid, const HostNames& names,
                                   const std::function<void(const AppView&)>& final_record) {
    // Keys begin with the host name: the host's applications are one range of the map.
    const std::string_view host_name = names.view(host);
    const KeyView first{host_name, {}, INT32_MIN, std::string_view(), 0};
    for (auto it = apps_.lower_bound(first);
         it != apps_.end() && std::get<0>(it->first) == host_name;) {
        if (std::get<2>(it->first) != pid) {
            ++it;
            continue;
        }
        Entry& e = it->second;
        if (e.has_e2e) final_record(e.view);
        // Incarnations still pointing here: one that never ended, of the exited process.
        if (e.matched_refs > 0) {
            std::erase_if(matched_, [&](const auto& kv) { return kv.second == &e; });
            forget_recent();
        }
        it = apps_.erase(it);
    }
}

std::vector<const AppView*> AppAggregator::apps() const {
    std::vector<const AppView*> out;
    for (const auto& [key, e] : apps_)
        if (e.has_e2e) out.push_back(&e.view);
    return out;
}

void keep_latest_records(WireQps& records) {
    std::sort(records.begin(), records.end(), [](const WireQp& a, const WireQp& b) {
        return std::make_tuple(a.ip.bytes, a.qpn, a.t_first, !a.final, -a.t_last, ~a.pkts, a.cnps,
                               a.ecn_ce) < std::make_tuple(b.ip.bytes, b.qpn, b.t_first, !b.final,
                                                           -b.t_last, ~b.pkts, b.cnps, b.ecn_ce);
    });
    const auto end =
        std::unique(records.begin(), records.end(), [](const WireQp& a, const WireQp& b) {
            return a.ip == b.ip && a.qpn == b.qpn && a.t_first == b.t_first;
        });
    records.erase(end, records.end());
}

std::vector<const WireQp*> attribute_qp_records(const WireQps& records, const HostModel& model,
                                                const std::vector<ClockEstimate>& clocks,
                                                AppAggregator& apps, const HostNames& names) {
    const QpIndex index(model);
    std::unordered_map<EndpointKey, std::vector<uint32_t>, EndpointKeyHash> by_peer_endpoint;
    for (uint32_t i = 0; i < model.qps.size(); ++i) {
        const Incarnation& q = model.qps[i];
        if (q.has_ip && q.has_peer) by_peer_endpoint[{q.peer_ip, q.dest_qpn}].push_back(i);
    }
    for (auto& [key, list] : by_peer_endpoint)
        std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
            return std::tie(model.qps[a].t_create, a) < std::tie(model.qps[b].t_create, b);
        });
    const auto theta = [&](uint32_t q) {
        const uint32_t h = model.qps[q].host;
        return h < clocks.size() ? clocks[h].offset : 0;
    };
    std::vector<const WireQp*> latest_of(model.qps.size(), nullptr);
    for (const WireQp& rec : records) {
        const auto& own = index.at_endpoint(rec.ip, rec.qpn);
        if (!own.empty()) {
            const int64_t q = index.pick(own, rec.t_first + theta(own.front()));
            if (q >= 0) {
                const auto qi = static_cast<std::size_t>(q);
                apps.add_counters(model.qps[qi], rec.cnps, rec.ecn_ce, 0, names);
                const WireQp*& latest = latest_of[qi];
                if (!latest ||
                    std::tie(rec.t_last, rec.t_first) > std::tie(latest->t_last, latest->t_first))
                    latest = &rec;
            }
        }
        const auto peers = by_peer_endpoint.find({rec.ip, rec.qpn});
        if (peers != by_peer_endpoint.end()) {
            const int64_t q = index.pick(peers->second, rec.t_first + theta(peers->second.front()));
            if (q >= 0)
                apps.add_counters(model.qps[static_cast<std::size_t>(q)], 0, 0, rec.ecn_ce, names);
        }
    }
    return latest_of;
}

std::vector<PairView> make_pairs(const HostModel& model,
                                 const std::vector<const WireQp*>& latest_of,
                                 const HostNames& names) {
    std::vector<PairView> pairs;
    for (std::size_t q = 0; q < model.qps.size(); ++q) {
        const Incarnation& inc = model.qps[q];
        const WireQp* rec = latest_of[q];
        if (!inc.has_peer || !rec) continue;
        const bool same = rec->pair_by != PairBy::none && rec->has_peer_ip &&
                          rec->peer_ip == inc.peer_ip && rec->peer_qpn == inc.dest_qpn;
        if (!same) pairs.push_back({&inc, rec});
    }
    std::sort(pairs.begin(), pairs.end(), [&](const PairView& a, const PairView& b) {
        return std::make_tuple(a.qp->ip.bytes, a.qp->qpn, a.qp->t_create, names.name(a.qp->host),
                               a.qp->pid) < std::make_tuple(b.qp->ip.bytes, b.qp->qpn,
                                                            b.qp->t_create, names.name(b.qp->host),
                                                            b.qp->pid);
    });
    return pairs;
}

Views make_views(const JoinResult& join, const HostModel& model, WireQps& qp_records,
                 const HostNames& names) {
    Views v;
    for (std::size_t q = 0; q < model.qps.size(); ++q)
        v.apps.add_unmatched(model.qps[q], join.unmatched_wr[q], names);
    keep_latest_records(qp_records);
    const std::vector<const WireQp*> latest_of =
        attribute_qp_records(qp_records, model, join.clocks, v.apps, names);
    v.pairs = make_pairs(model, latest_of, names);
    return v;
}

}  // namespace insert::correlate
