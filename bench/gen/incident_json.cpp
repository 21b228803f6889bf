#include "bench/gen/incident_json.hpp"

#include <cstdio>

#include "bench/gen/host_trace_json.hpp"

namespace insert::gen {

namespace {

// Appends `,"key":` (no comma first when `first`).
void key(std::string& s, const char* k, bool first = false) {
    if (!first) s += ',';
    s += '"';
    s += k;
    s += "\":";
}
void num(std::string& s, const char* k, uint64_t v, bool first = false) {
    key(s, k, first);
    s += std::to_string(v);
}
void snum(std::string& s, const char* k, int64_t v) {
    key(s, k);
    s += std::to_string(v);
}
void text(std::string& s, const char* k, const std::string& v, bool first = false) {
    key(s, k, first);
    s += '"';
    s += v;  // addresses, host and process names: nothing to escape
    s += '"';
}
template <typename T>
void opt(std::string& s, const char* k, const std::optional<T>& v) {
    key(s, k);
    s += v ? std::to_string(*v) : "null";
}

// A fraction with four decimals (as the correlator writes shares).
void share(std::string& s, const char* k, double v) {
    key(s, k);
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", v);
    s += text;
}

std::string ip(const Scenario& sc, uint16_t host) {
    return sc.hosts[host].ip.to_string();
}

// pid comm cgroup host of an incarnation's owner, or null.
void owner(std::string& s, const HostTrace& trace, const E2eTruth& e2e, std::optional<uint32_t> inc,
           bool cgroup) {
    if (!inc) {
        s += cgroup ? R"(,"pid":null,"comm":null,"cgroup":null,"host":null)"
                    : R"(,"pid":null,"comm":null,"host":null)";
        return;
    }
    const Incarnation& q = e2e.incarnations()[*inc];
    num(s, "pid", q.pid);
    text(s, "comm", trace.comm(q.proc));
    if (cgroup) num(s, "cgroup", trace.cgroup(q.proc));
    text(s, "host", trace_host_name(q.host));
}

}  // namespace

std::string alert_json(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
                       const AlertRecord& a) {
    const Offence& o = a.first;
    const TruthMsg& m = *e2e.joined_msgs()[o.msg];
    std::string s = R"({"type":"alert")";
    text(s, "kind", alert_kind_name(a.kind));
    text(s, "severity", alert_severity(a.kind));
    num(s, "t_ns", a.t_ns);
    num(s, "count", a.count);
    // victim: the target QP and its owner; unowned_qp: the address and QPN alone.
    key(s, "victim");
    s += '{';
    text(s, "ip", ip(sc, o.victim_ip), true);
    num(s, "qpn", o.victim_qpn);
    owner(s, trace, e2e,
          o.victim_inc != kNoIncarnation ? std::optional(o.victim_inc) : std::nullopt, true);
    s += '}';
    // source: the first offence's requester incarnation, else its address (and the
    // dataplane's src_qpn).
    const std::optional<uint32_t> req = e2e.msg_join()[o.msg].req;
    key(s, "source");
    s += '{';
    text(s, "ip", ip(sc, o.src_ip), true);
    opt(s, "qpn", req ? std::optional(e2e.incarnations()[*req].qpn) : m.src_qpn);
    owner(s, trace, e2e, req, false);
    key(s, "claimed");
    s += a.claimed ? "true" : "false";
    s += '}';
    key(s, "evidence");
    s += '{';
    text(s, "op", op_name(m.op), true);
    opt(s, "rkey", m.rkey);
    opt(s, "va", m.va);
    const bool atomic = m.op == OpType::cmp_swap || m.op == OpType::fetch_add;
    num(s, "length", atomic ? 8 : m.dma_len ? *m.dma_len : m.bytes);
    num(s, "psn_first", m.psn_first);
    text(s, "status", status_name(m.status));
    num(s, "pkts", a.pkts);
    key(s, "rkeys");
    s += '[';
    for (std::size_t i = 0; i < a.rkeys.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(a.rkeys[i]);
    }
    s += ']';
    num(s, "distinct_rkeys", a.distinct_rkeys);
    num(s, "victims", a.victims);
    s += '}';
    num(s, "t_last_ns", a.t_last_ns);
    s += "}\n";
    return s;
}

std::string congestion_json(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
                            const CongestionRecord& c) {
    std::string s = R"({"type":"congestion")";
    num(s, "t_start_ns", c.t_start_ns);
    num(s, "t_end_ns", c.t_end_ns);
    key(s, "where");
    s += '{';
    text(s, "node", c.node, true);
    key(s, "dst_ips");
    s += '[';
    for (std::size_t i = 0; i < c.dst_ips.size(); ++i) {
        if (i) s += ',';
        s += '"' + ip(sc, c.dst_ips[i]) + '"';
    }
    s += "]}";
    key(s, "signals");
    s += '{';
    num(s, "cnps", c.cnps, true);
    num(s, "ecn_ce", c.ecn_ce);
    num(s, "retx_pkts", c.retx_pkts);
    num(s, "naks", c.naks);
    snum(s, "p99_net_ns", c.p99_net_ns);
    snum(s, "baseline_net_ns", c.baseline_net_ns);
    num(s, "msgs", c.msgs);
    s += '}';
    auto list = [&](const char* name, const std::vector<CongestionSource>& v, bool victims) {
        key(s, name);
        s += '[';
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) s += ',';
            s += '{';
            text(s, "ip", ip(sc, v[i].ip), true);
            owner(s, trace, e2e, v[i].inc, true);
            num(s, "msgs", v[i].msgs);
            if (victims) {
                share(s, "bytes_share", v[i].bytes_share);
                snum(s, "net_ns_mean", v[i].net_ns_mean);
                snum(s, "net_ns_p99", v[i].net_ns_p99);
                opt(s, "baseline_net_ns_mean", v[i].baseline_net_ns_mean);
                opt(s, "baseline_net_ns_p99", v[i].baseline_net_ns_p99);
                const auto added = [](int64_t in, const std::optional<int64_t>& base) {
                    return base ? std::optional<int64_t>(in - *base) : std::nullopt;
                };
                opt(s, "added_net_ns_mean", added(v[i].net_ns_mean, v[i].baseline_net_ns_mean));
                opt(s, "added_net_ns_p99", added(v[i].net_ns_p99, v[i].baseline_net_ns_p99));
            } else {
                num(s, "bytes", v[i].bytes);
                share(s, "bytes_share", v[i].bytes_share);
            }
            num(s, "cnps", v[i].cnps);
            if (!victims) {
                key(s, "victim");
                s += v[i].victim ? "true" : "false";
            }
            s += '}';
        }
        s += ']';
    };
    list("victims", c.victims, true);
    list("contributors", c.contributors, false);
    s += "}\n";
    return s;
}

std::string incident_counts_json(const AlertTruth& alerts, const CongestionTruth& congestion) {
    std::string s;
    key(s, "alerts");
    s += '{';
    const auto counts = alerts.counts();
    for (std::size_t k = 0; k < kAlertKinds; ++k)
        num(s, alert_kind_name(static_cast<AlertKind>(k)), counts[k], k == 0);
    s += '}';
    num(s, "congestion", congestion.episodes().size());
    return s;
}

}  // namespace insert::gen
