#include "correlator/output/views.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "correlator/input/line_parser.hpp"
#include "correlator/join/qp_index.hpp"

namespace insert::correlate {

namespace {

int64_t sub_or_none(int64_t a, int64_t b) {
    return a == kNone || b == kNone ? kNone : a - b;
}

// docs/correlation.md 6: per endpoint instance (ip, qpn, t_first_ns) the latest record:
// final beats interval, then the larger t_last_ns (then the larger pkts, for a total order).
void keep_latest_records(std::vector<WireQp>& records) {
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

using AppKey = std::tuple<std::string, std::array<uint8_t, 16>, int32_t, std::string, uint64_t>;

AppKey app_key(const Incarnation& q, const HostNames& names) {
    return {names.name(q.host), q.ip.bytes, q.pid, std::string(q.comm.view()), q.cgroup};
}

}  // namespace

std::vector<E2eRow> make_e2e_rows(const JoinResult& join, const HostModel& model,
                                  const std::vector<WireMsg>& msgs) {
    std::vector<E2eRow> rows;
    rows.reserve(join.matches.size());
    for (const E2eMatch& match : join.matches) {
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
        if (r.responder && join.t_recv_poll[match.msg] != kNone)
            r.t_recv_poll = join.t_recv_poll[match.msg] - join.clocks[r.responder->host].offset;
        // SPEC 10 latency split: host + net + completion == total, all in observer ns.
        r.host_ns = r.msg->t_first - r.t_post;
        r.net_ns = sub_or_none(r.msg->t_ack, r.msg->t_first);
        r.completion_ns = sub_or_none(r.t_poll, r.msg->t_ack);
        r.total_ns = sub_or_none(r.wr->t_poll, r.wr->wall);
        rows.push_back(r);
    }
    return rows;
}

Views make_views(const JoinResult& join, const HostModel& model, const std::vector<WireMsg>& msgs,
                 std::vector<WireQp>& qp_records, const HostNames& names) {
    Views v;
    v.e2e = make_e2e_rows(join, model, msgs);

    // Applications: every process/address owning a requester QP with a matched message.
    std::map<AppKey, AppView> apps;
    std::vector<bool> counted(model.qps.size(), false);
    for (const E2eRow& r : v.e2e) {
        const Incarnation& q = *r.requester;
        AppView& app = apps[app_key(q, names)];
        if (app.qps == 0) {
            app.host = names.name(q.host);
            app.ip = q.ip;
            app.pid = q.pid;
            app.comm = q.comm;
            app.cgroup = q.cgroup;
        }
        const std::size_t qi = static_cast<std::size_t>(&q - model.qps.data());
        if (!counted[qi]) {
            counted[qi] = true;
            ++app.qps;
        }
        const auto op = static_cast<std::size_t>(r.msg->op);
        ++app.msgs[op];
        app.bytes[op] += r.wr->len;
        if (r.host_ns != kNone) app.host_ns.add(r.host_ns);
        if (r.net_ns != kNone) app.net_ns.add(r.net_ns);
        if (r.completion_ns != kNone) app.completion_ns.add(r.completion_ns);
        if (r.total_ns != kNone) app.total_ns.add(r.total_ns);
        app.retx_pkts += r.msg->retx_pkts;
        app.naks += r.msg->naks;
    }
    const auto app_of = [&](const Incarnation& q) -> AppView* {
        if (!q.has_ip) return nullptr;
        const auto it = apps.find(app_key(q, names));
        return it == apps.end() ? nullptr : &it->second;
    };
    for (std::size_t q = 0; q < model.qps.size(); ++q)
        if (AppView* app = app_of(model.qps[q])) app->unmatched_wr += join.unmatched_wr[q];

    // Dataplane counters of each endpoint instance, to the incarnation alive then: its
    // own (cnps, ecn_ce received) and, as a peer, the QP connected to it (ecn_ce caused).
    keep_latest_records(qp_records);
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
    const auto theta = [&](uint32_t q) { return join.clocks[model.qps[q].host].offset; };
    std::vector<const WireQp*> latest_of(model.qps.size(), nullptr);
    for (const WireQp& rec : qp_records) {
        const auto& own = index.at_endpoint(rec.ip, rec.qpn);
        if (!own.empty()) {
            const int64_t q = index.pick(own, rec.t_first + theta(own.front()));
            if (q >= 0) {
                if (AppView* app = app_of(model.qps[static_cast<std::size_t>(q)])) {
                    app->cnps += rec.cnps;
                    app->ecn_ce += rec.ecn_ce;
                }
                const WireQp*& latest = latest_of[static_cast<std::size_t>(q)];
                if (!latest ||
                    std::tie(rec.t_last, rec.t_first) > std::tie(latest->t_last, latest->t_first))
                    latest = &rec;
            }
        }
        const auto peers = by_peer_endpoint.find({rec.ip, rec.qpn});
        if (peers != by_peer_endpoint.end()) {
            const int64_t q = index.pick(peers->second, rec.t_first + theta(peers->second.front()));
            if (q >= 0)
                if (AppView* app = app_of(model.qps[static_cast<std::size_t>(q)]))
                    app->ecn_ce_caused += rec.ecn_ce;
        }
    }
    for (auto& [key, app] : apps) v.apps.push_back(std::move(app));

    // Pairs the host knows and the dataplane did not make (or made otherwise).
    for (std::size_t q = 0; q < model.qps.size(); ++q) {
        const Incarnation& inc = model.qps[q];
        const WireQp* rec = latest_of[q];
        if (!inc.has_peer || !rec) continue;
        const bool same = rec->pair_by != PairBy::none && rec->has_peer_ip &&
                          rec->peer_ip == inc.peer_ip && rec->peer_qpn == inc.dest_qpn;
        if (!same) v.pairs.push_back({&inc, rec});
    }
    std::sort(v.pairs.begin(), v.pairs.end(), [&](const PairView& a, const PairView& b) {
        return std::make_tuple(a.qp->ip.bytes, a.qp->qpn, a.qp->t_create, names.name(a.qp->host),
                               a.qp->pid) < std::make_tuple(b.qp->ip.bytes, b.qp->qpn,
                                                            b.qp->t_create, names.name(b.qp->host),
                                                            b.qp->pid);
    });
    return v;
}

}  // namespace insert::correlate
