#include "correlator/output/record_writer.hpp"

#include <iterator>
#include <optional>

#include "correlator/input/host_names.hpp"
#include "correlator/input/mac_address.hpp"
#include "correlator/usecases/origin.hpp"
#include "dataplane/common/json_line.hpp"

namespace insert::correlate {

namespace {

void append_part(JsonLine& line, std::string_view key, const PartStats& part) {
    std::string nested;
    JsonLine obj(nested);
    const auto value = [&](std::string_view k, std::optional<int64_t> v) {
        if (v)
            obj.i(k, *v);
        else
            obj.null(k);
    };
    value("p50", part.percentile(50));
    value("p99", part.percentile(99));
    value("max", part.max());
    obj.close();
    line.raw(key, nested);
}

void append_by_op(JsonLine& line, std::string_view key, const std::array<uint64_t, 5>& counts) {
    std::string nested;
    JsonLine obj(nested);
    for (std::size_t i = 0; i < counts.size(); ++i) obj.u(kOpNames[i], counts[i]);
    obj.close();
    line.raw(key, nested);
}

}  // namespace

void append_cgroup(std::string& out, std::string_view host, uint64_t id, const std::string* path) {
    JsonLine line(out);
    line.word("type", "cgroup").s("host", host).u("id", id);
    if (path)
        line.s("path", *path);
    else
        line.null("path");
    line.end();
}

void append_app(std::string& out, const AppView& a, bool final, const std::string* cgroup_path) {
    JsonLine line(out);
    line.s("type", "app")
        .s("host", a.host)
        .ip("ip", a.ip)
        .i("pid", a.pid)
        .s("comm", a.comm.view())
        .u("cgroup", a.cgroup);
    if (cgroup_path)
        line.s("cgroup_path", *cgroup_path);
    else
        line.null("cgroup_path");
    line.u("qps", a.qps);
    append_by_op(line, "msgs", a.msgs);
    append_by_op(line, "bytes", a.bytes);
    append_part(line, "host_ns", a.host_ns);
    append_part(line, "net_ns", a.net_ns);
    append_part(line, "completion_ns", a.completion_ns);
    append_part(line, "total_ns", a.total_ns);
    line.u("signaled_wrs", a.signaled_wrs)
        .u("retx_pkts", a.retx_pkts)
        .u("naks", a.naks)
        .u("cnps", a.cnps)
        .u("ecn_ce", a.ecn_ce)
        .u("ecn_ce_caused", a.ecn_ce_caused)
        .u("unmatched_wr", a.unmatched_wr)
        .b("final", final);
    line.end();
}

void append_pair(std::string& out, const PairView& p, const HostNames& names) {
    const Incarnation& q = *p.qp;
    JsonLine line(out);
    line.s("type", "pair")
        .ip("ip", q.ip)
        .u("qpn", q.qpn)
        .ip("peer_ip", q.peer_ip)
        .u("peer_qpn", q.dest_qpn)
        .s("pair_by", "host");
    const WireQp& d = *p.dataplane;
    if (d.pair_by == PairBy::none)
        line.null("dp_pair_by");
    else
        line.s("dp_pair_by", kPairByNames[static_cast<std::size_t>(d.pair_by)]);
    if (d.has_peer_ip)
        line.ip("dp_peer_ip", d.peer_ip);
    else
        line.null("dp_peer_ip");
    line.opt_u("dp_peer_qpn", d.peer_qpn)
        .i("pid", q.pid)
        .s("comm", q.comm.view())
        .s("host", names.view(q.host));
    line.end();
}

void append_clock(std::string& out, std::string_view host, const ClockEstimate& c) {
    JsonLine line(out);
    line.s("type", "clock").s("host", host);
    if (c.bounds.has_lo)
        line.i("lo_ns", c.bounds.lo);
    else
        line.null("lo_ns");
    if (c.bounds.has_hi)
        line.i("hi_ns", c.bounds.hi);
    else
        line.null("hi_ns");
    line.i("offset_ns", c.offset)
        .s("source", clock_source_name(c.source))
        .b("consistent", c.consistent)
        .u("matches", c.bounds.matches);
    line.end();
}

namespace {

// `claimed`: the source object's last field (SPEC 10 v1.3); none for a victim.
std::string owner_object(const Ip& ip, int64_t qpn, const QpOwner& owner, bool with_cgroup,
                         std::optional<bool> claimed = std::nullopt) {
    std::string text;
    JsonLine obj(text);
    obj.ip("ip", ip).opt_u("qpn", qpn);
    if (owner.traced) {
        obj.i("pid", owner.pid).s("comm", owner.comm.view());
        if (with_cgroup) obj.u("cgroup", owner.cgroup);
        obj.s("host", owner.host);
    } else {
        obj.null("pid").null("comm");
        if (with_cgroup) obj.null("cgroup");
        obj.null("host");
    }
    if (claimed) obj.b("claimed", *claimed);
    obj.close();
    return text;
}

// evidence.origin (docs/correlation.md 8).
std::string origin_object(const OriginEvidence& e) {
    const auto fields = [](JsonLine& obj, const PacketOrigin& o) {
        obj.s("src_mac", mac_text(o.mac)).u("ttl", o.ttl);
        if (o.port == kNoOriginPort)
            obj.null("port");
        else
            obj.u("port", o.port);
    };
    std::string text, usual, differs = "[";
    for (std::string_view name : differing(e)) {
        if (differs.size() > 1) differs += ',';
        differs += '"';
        differs += name;
        differs += '"';
    }
    differs += ']';
    JsonLine obj(text);
    fields(obj, e.seen);
    if (e.usual) {
        JsonLine u(usual);
        fields(u, *e.usual);
        u.close();
        obj.raw("usual", usual);
    } else {
        obj.null("usual");
    }
    obj.raw("differs", differs);
    obj.close();
    return text;
}

}  // namespace

void append_congestion(std::string& out, const CongestionEpisode& e) {
    const auto apps = [](const std::vector<EpisodeApp>& list, bool victims) {
        std::string text = "[";
        for (std::size_t i = 0; i < list.size(); ++i) {
            const EpisodeApp& a = list[i];
            if (i) text += ',';
            JsonLine obj(text);
            obj.ip("ip", a.app.ip);
            if (a.app.owner.traced)
                obj.i("pid", a.app.owner.pid)
                    .s("comm", a.app.owner.comm.view())
                    .u("cgroup", a.app.owner.cgroup)
                    .s("host", a.app.owner.host);
            else
                obj.null("pid").null("comm").null("cgroup").null("host");
            obj.u("msgs", a.msgs);
            if (victims) {
                // Per message (SPEC 10 v1.3), against its own latency outside episodes.
                const auto or_null = [](const std::optional<int64_t>& v) {
                    return v ? *v : kJsonNull;
                };
                const auto added = [](int64_t in, const std::optional<int64_t>& base) {
                    return base ? in - *base : kJsonNull;
                };
                obj.fixed("bytes_share", a.bytes_share, 4)
                    .i("net_ns_mean", a.net_ns_mean)
                    .i("net_ns_p99", a.net_ns_p99)
                    .opt("baseline_net_ns_mean", or_null(a.baseline_net_ns_mean))
                    .opt("baseline_net_ns_p99", or_null(a.baseline_net_ns_p99))
                    .opt("added_net_ns_mean", added(a.net_ns_mean, a.baseline_net_ns_mean))
                    .opt("added_net_ns_p99", added(a.net_ns_p99, a.baseline_net_ns_p99));
            } else {
                obj.u("bytes", a.bytes).fixed("bytes_share", a.bytes_share, 4);
            }
            obj.u("cnps", a.cnps);
            if (!victims) obj.b("victim", a.victim);
            obj.close();
        }
        return text + "]";
    };
    std::string where, signals, ips = "[";
    for (std::size_t i = 0; i < e.dst_ips.size(); ++i) {
        if (i) ips += ',';
        ips += '"' + e.dst_ips[i].to_string() + '"';
    }
    ips += ']';
    JsonLine(where).s("node", e.node).raw("dst_ips", ips).close();
    JsonLine(signals)
        .u("cnps", e.cnps)
        .u("ecn_ce", e.ecn_ce)
        .u("retx_pkts", e.retx_pkts)
        .u("naks", e.naks)
        .i("p99_net_ns", e.p99_net_ns)
        .i("baseline_net_ns", e.baseline_net_ns)
        .u("msgs", e.msgs)
        .close();
    JsonLine line(out);
    line.s("type", "congestion")
        .i("t_start_ns", e.t_start_ns)
        .i("t_end_ns", e.t_end_ns)
        .raw("where", where)
        .raw("signals", signals)
        .raw("victims", apps(e.victims, true))
        .raw("contributors", apps(e.contributors, false));
    line.end();
}

void append_alert(std::string& out, const Alert& a) {
    const Offence& o = a.first;
    const WireMsg& m = o.msg;
    std::string evidence, rkeys = "[";
    for (std::size_t i = 0; i < a.rkeys.size(); ++i) {
        if (i) rkeys += ',';
        rkeys += std::to_string(a.rkeys[i]);
    }
    rkeys += ']';
    JsonLine ev(evidence);
    ev.word("op", kOpNames[static_cast<std::size_t>(m.op)])
        .opt_u("rkey", m.rkey)
        .opt_u("va", m.va)
        .opt_u("length", m.op == Op::cmp_swap || m.op == Op::fetch_add
                             ? int64_t{8}
                             : (m.dma_len != kNone ? m.dma_len : static_cast<int64_t>(m.bytes)))
        .u("psn_first", m.psn_first)
        .word("status", kStatusNames[static_cast<std::size_t>(m.status)])
        .u("pkts", a.pkts)
        .raw("rkeys", rkeys)
        .u("distinct_rkeys", a.distinct_rkeys)
        .u("victims", a.victims);
    if (wants_origin(a.kind)) {
        if (o.origin.seen.known)
            ev.raw("origin", origin_object(o.origin));
        else
            ev.null("origin");  // the msg record said nothing of it (an older insert-dp)
    }
    ev.close();
    JsonLine line(out);
    line.s("type", "alert")
        .s("kind", alert_kind_name(a.kind))
        .s("severity", alert_severity(a.kind))
        .i("t_ns", a.t_ns)
        .u("count", a.count)
        .raw("victim", owner_object(o.victim_ip, o.victim_qpn, o.victim, true))
        .raw("source", owner_object(o.source_ip, o.source_qpn, o.source, false, o.claimed))
        .raw("evidence", evidence)
        .i("t_last_ns", a.t_last_ns);
    line.end();
}

}  // namespace insert::correlate
