#include "bench/gen/e2e_truth_json.hpp"

#include <vector>

#include "bench/gen/host_trace_json.hpp"
#include "bench/gen/incident_json.hpp"
#include "bench/gen/jsonl_file.hpp"

namespace insert::gen {

namespace {

JsonCursor& signed_num(JsonCursor& c, int64_t v) {
    if (v < 0) return c.lit("-").num(static_cast<uint64_t>(-(v + 1)) + 1);
    return c.num(static_cast<uint64_t>(v));
}

template <std::size_t N>
JsonCursor& opt_signed(JsonCursor& c, const char (&k)[N], const std::optional<int64_t>& v) {
    c.key(k);
    return v ? signed_num(c, *v) : c.lit("null");
}

class Writer {
  public:
    Writer(const Scenario& sc, const HostTrace& trace, const E2eOutputs& all, JsonOut& out)
        : sc_(sc), trace_(trace), truth_(all.e2e), all_(all), out_(out) {
        for (std::size_t h = 0; h < sc.hosts.size(); ++h) {
            ip_.emplace_back(sc.hosts[h].ip.to_string());
            name_.emplace_back(trace_host_name(h));
        }
        for (const char* n : HostLayout::kProcessNames) comm_.emplace_back(n);
        for (std::size_t op = 0; op < kOpTypes; ++op)
            op_.emplace_back(op_name(static_cast<OpType>(op)));
    }

    void write() {
        // Section 6's order: e2e, then (sections 8, 9) alert and congestion, then pair,
        // app, clock, summary.
        for (const E2eRecord& e : truth_.e2e()) e2e(e);
        if (all_.alerts)
            for (const AlertRecord& a : all_.alerts->alerts())
                out_.raw(alert_json(sc_, trace_, truth_, a));
        if (all_.congestion)
            for (const CongestionRecord& c : all_.congestion->episodes())
                out_.raw(congestion_json(sc_, trace_, truth_, c));
        for (const PairRecord& p : truth_.pairs()) pair(p);
        for (const AppRecord& a : truth_.apps()) app(a);
        for (const ClockRecord& c : truth_.clocks()) clock(c);
        summary();
    }

  private:
    JsonCursor& comm(JsonCursor& c, uint32_t proc) {
        return c.padded(comm_[trace_.process(proc).comm]);
    }

    // Section 6 `e2e`: SPEC 10's fields in SPEC's order, then the extras.
    void e2e(const E2eRecord& e) {
        const TruthMsg& m = *e.msg;
        const Incarnation& q = truth_.incarnations()[e.req];
        const Incarnation* r = e.resp ? &truth_.incarnations()[*e.resp] : nullptr;
        JsonCursor c = out_.reserve();
        c.lit("{\"type\":\"e2e\"").key("src_ip").padded(ip_[m.src_host]).field("src_qpn", q.qpn);
        c.key("dst_ip").padded(ip_[m.dst_host]).field("dst_qpn", m.dst_qpn);
        c.key("op").padded(op_[static_cast<int>(m.op)]).field("bytes", e.bytes);
        c.field("psn_first", m.psn_first).field("wr_id", e.wr_id).field("pid", q.pid);
        comm(c.key("comm"), q.proc).field("cgroup", trace_.cgroup(q.proc));
        if (r) {
            c.field("peer_pid", r->pid);
            comm(c.key("peer_comm"), r->proc);
        } else {
            c.lit(",\"peer_pid\":null,\"peer_comm\":null");
        }
        signed_num(c.key("t_post_ns"), e.t_post_ns).field("t_first_ns", m.t_first_ns);
        c.field_opt("t_ack_ns", m.t_ack_ns);
        opt_signed(c, "t_poll_ns", e.t_poll_ns);
        opt_signed(c, "host_ns", e.host_ns());
        opt_signed(c, "net_ns", e.net_ns());
        opt_signed(c, "completion_ns", e.completion_ns());
        opt_signed(c, "total_ns", e.total_ns());
        c.field("retx_pkts", m.retx_pkts).field("naks", m.naks);
        c.key("status").lit("\"").str(status_name(m.status)).lit("\"");
        c.key("match");
        e.resync ? c.lit("\"resync\"") : c.lit("\"exact\"");
        c.key("host").padded(name_[q.host]);
        if (r) {
            c.key("peer_host").padded(name_[r->host]).field("peer_cgroup", trace_.cgroup(r->proc));
        } else {
            c.lit(",\"peer_host\":null,\"peer_cgroup\":null");
        }
        c.key("signaled");
        e.signaled ? c.lit("true") : c.lit("false");
        c.key("wc_status");
        if (e.wc_status)
            c.lit("\"").str(wc_status_name(*e.wc_status)).lit("\"");
        else
            c.lit("null");
        opt_signed(c, "t_recv_poll_ns", e.t_recv_poll_ns);
        opt_signed(c, "t_covered_ns", e.t_covered_ns);
        c.field("gen_msg", m.msg_uid).lit("}\n");
        out_.commit(c);
    }

    void part(JsonCursor& c, const Percentiles& p) {
        c.lit("{");
        c.key("p50", true);
        p.p50 ? signed_num(c, *p.p50) : c.lit("null");
        opt_signed(c, "p99", p.p99);
        opt_signed(c, "max", p.max).lit("}");
    }

    void by_op(JsonCursor& c, const std::array<uint64_t, kOpTypes>& v) {
        c.lit("{").key("SEND", true).num(v[0]).field("WRITE", v[1]).field("READ", v[2]);
        c.field("CMP_SWAP", v[3]).field("FETCH_ADD", v[4]).lit("}");
    }

    // Section 6 `app` (final).
    void app(const AppRecord& a) {
        JsonCursor c = out_.reserve();
        c.lit("{\"type\":\"app\"").key("host").padded(name_[a.host]).key("ip").padded(ip_[a.ip]);
        c.field("pid", trace_.pid(a.proc));
        comm(c.key("comm"), a.proc).field("cgroup", trace_.cgroup(a.proc));
        c.key("cgroup_path").lit("\"").str(trace_.cgroup_path(a.proc)).lit("\"");
        c.field("qps", a.qps);
        by_op(c.key("msgs"), a.msgs);
        by_op(c.key("bytes"), a.bytes);
        part(c.key("host_ns"), a.host_ns);
        part(c.key("net_ns"), a.net_ns);
        part(c.key("completion_ns"), a.completion_ns);
        part(c.key("total_ns"), a.total_ns);
        c.field("signaled_wrs", a.signaled_wrs);
        c.field("retx_pkts", a.retx_pkts).field("naks", a.naks).field("cnps", a.cnps);
        c.field("ecn_ce", a.ecn_ce).field("ecn_ce_caused", a.ecn_ce_caused);
        c.field("unmatched_wr", a.unmatched_wr).lit(",\"final\":true}\n");
        out_.commit(c);
    }

    // Section 6 `clock`; gen_offset_ns: the host's true offset.
    void clock(const ClockRecord& k) {
        JsonCursor c = out_.reserve();
        c.lit("{\"type\":\"clock\"").key("host").padded(name_[k.host]);
        opt_signed(c, "lo_ns", k.lo);
        opt_signed(c, "hi_ns", k.hi);
        signed_num(c.key("offset_ns"), k.offset);
        c.key("source").lit("\"").str(k.source).lit("\"").key("consistent");
        k.consistent ? c.lit("true") : c.lit("false");
        c.field("matches", k.matches);
        signed_num(c.key("gen_offset_ns"), trace_.hosts()[k.host].theta_ns).lit("}\n");
        out_.commit(c);
    }

    // Section 6 `pair`.
    void pair(const PairRecord& p) {
        const Incarnation& q = truth_.incarnations()[p.inc];
        JsonCursor c = out_.reserve();
        c.lit("{\"type\":\"pair\"").key("ip").padded(ip_[*q.ip]).field("qpn", q.qpn);
        c.key("peer_ip").padded(ip_[*q.peer_ip]).field("peer_qpn", q.dest_qpn);
        c.lit(",\"pair_by\":\"host\"").key("dp_pair_by");
        if (p.dp_pair_by && pair_rule_name(*p.dp_pair_by))
            c.lit("\"").str(pair_rule_name(*p.dp_pair_by)).lit("\"");
        else
            c.lit("null");
        c.key("dp_peer_ip");
        if (p.dp_peer_ip)
            c.padded(ip_[*p.dp_peer_ip]);
        else
            c.lit("null");
        c.field_opt("dp_peer_qpn", p.dp_peer_qpn).field("pid", q.pid);
        comm(c.key("comm"), q.proc).lit("}\n");
        out_.commit(c);
    }

    // Section 6 `summary`'s join counts, in its order (inputs, bad and wall_s describe a
    // correlator run, not the truth; late and evicted are 0 in a batch join).
    void summary() {
        const E2eSummary& s = truth_.summary();
        JsonCursor c = out_.reserve();
        c.lit("{\"type\":\"e2e_summary\"").field("e2e", s.e2e).field("exact", s.exact);
        c.field("resync", s.resync).field("unmatched_wr", s.unmatched_wr);
        c.field("wire_only", s.wire_only).field("src_untraced", s.src_untraced);
        c.field("src_host_untraced", s.src_host_untraced);
        c.field("duplicate_msgs", s.duplicate_msgs).field("pair_conflicts", s.pair_conflicts);
        c.field("qps_without_ip", s.qps_without_ip).field("recv_matched", s.recv_matched);
        c.lit(",\"late\":0,\"evicted\":{\"wrs\":0,\"msgs\":0,\"completions\":0}");
        c.field("hosts", s.hosts).field("qps", s.qps).field("apps", s.apps);
        c.field("pairs", s.pairs).field("trace_drops", s.trace_drops);
        if (all_.alerts && all_.congestion)
            c.str(incident_counts_json(*all_.alerts, *all_.congestion));
        c.field("gen_mispaired", truth_.mispaired());
        c.field("gen_indistinguishable", truth_.indistinguishable()).lit("}\n");
        out_.commit(c);
    }

    const Scenario& sc_;
    const HostTrace& trace_;
    const E2eTruth& truth_;
    const E2eOutputs& all_;
    JsonOut& out_;
    std::vector<PaddedString> ip_, name_, comm_, op_;
};

}  // namespace

void write_e2e_records(const Scenario& sc, const HostTrace& trace, const E2eOutputs& truth,
                       JsonOut& out) {
    Writer(sc, trace, truth, out).write();
}

bool write_e2e_truth(const Scenario& sc, const HostTrace& trace, const E2eOutputs& truth,
                     const std::string& path, std::string& error) {
    JsonLinesFile file;
    if (!file.open(path, error)) return false;
    write_e2e_records(sc, trace, truth, file.out());
    return file.finish(error);
}

}  // namespace insert::gen
