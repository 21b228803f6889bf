#include "dataplane/export/human_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "dataplane/common/qpn_text.hpp"
#include "dataplane/export/record_names.hpp"

namespace insert::exporter {

using namespace insert::state;

namespace {

// "12,345,678": counters on a terminal are read, not parsed.
std::string grouped(uint64_t v) {
    std::string digits = std::to_string(v);
    std::string out;
    const std::size_t n = digits.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (i && (n - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

std::string duration(uint64_t ns) {
    if (ns < 10'000) return fmt::format("{} ns", ns);
    if (ns < 10'000'000) return fmt::format("{:.1f} us", ns / 1e3);
    if (ns < 10'000'000'000ull) return fmt::format("{:.1f} ms", ns / 1e6);
    return fmt::format("{:.2f} s", ns / 1e9);
}

std::string endpoint(const IpAddress& ip, uint32_t qpn) {
    return fmt::format("{}/{}", ip.to_string(), qpn_text(qpn));
}

std::string peer(const QpRecord& q) {
    if (q.pair_by == PairBy::none) return "unpaired";
    return fmt::format("{} ({})", endpoint(q.peer_ip, q.peer_qpn), pair_by_name(q.pair_by));
}

uint64_t nak_total(const NakCounts& n) {
    return n.seq + n.rnr + n.inv + n.access + n.op;
}

uint64_t msg_total(const QpRecord& q) {
    uint64_t t = 0;
    for (uint64_t m : q.msgs) t += m;
    return t;
}

}  // namespace

void HumanSummary::offer(std::vector<Ranked>& list, uint64_t key, const QpRecord& qp) {
    if (key == 0 || top_ == 0) return;
    if (list.size() == top_ && key <= list.back().key) return;
    auto it = std::upper_bound(list.begin(), list.end(), key,
                               [](uint64_t k, const Ranked& r) { return k > r.key; });
    list.insert(it, Ranked{key, qp});
    if (list.size() > top_) list.pop_back();
}

void HumanSummary::observe(const Record& r) {
    switch (r.type) {
        case RecordType::msg: {
            const MsgRecord& m = r.msg;
            ++msgs_by_op_[static_cast<unsigned>(m.op) % 5];
            ++msgs_by_status_[static_cast<unsigned>(m.status) % 7];
            if (m.has_ack) latency_.add(m.t_ack_ns - m.t_first_ns);
            break;
        }
        case RecordType::qp: {
            const QpRecord& q = r.qp;
            if (!q.final) break;
            ++final_qps_;
            bytes_ += q.bytes;
            dup_ += q.dup_pkts;
            ooo_ += q.ooo_pkts;
            gaps_ += q.gaps;
            missing_ += q.missing;
            naks_ += nak_total(q.naks) - q.naks.rnr;
            rnr_ += q.naks.rnr;
            cnps_ += q.cnps;
            ecn_ += q.ecn_ce;
            offer(by_bytes_, q.bytes, q);
            offer(by_retx_, q.dup_pkts + q.ooo_pkts + q.missing + nak_total(q.naks), q);
            offer(by_congestion_, q.cnps + q.ecn_ce, q);
            break;
        }
        case RecordType::event:
            ++events_by_kind_[static_cast<unsigned>(r.event.kind) % 8];
            break;
        case RecordType::mark:
            break;
    }
}

std::string HumanSummary::render(const SummaryCounts& s, const RunInfo& run) const {
    std::string o;
    auto out = std::back_inserter(o);
    uint64_t malformed = 0;
    for (std::size_t i = 1; i < proto::kMalformedReasons; ++i) malformed += s.malformed[i];

    fmt::format_to(out, "INSERT {} {} {}\n", run.mode, run.mode == "replay" ? "of" : "on",
                   run.input.empty() ? "(input)" : run.input);
    fmt::format_to(out, "  frames      {} in {:.3f} s ({:.2f} Mpps)\n", grouped(s.pkts), s.wall_s,
                   s.mpps);
    fmt::format_to(out, "              roce {}, non-roce {}, malformed {}", grouped(s.roce_pkts),
                   grouped(s.non_roce_pkts), grouped(malformed));
    if (malformed) {
        o += " (";
        bool first = true;
        for (std::size_t i = 1; i < proto::kMalformedReasons; ++i) {
            if (!s.malformed[i]) continue;
            fmt::format_to(out, "{}{} {}", first ? "" : ", ",
                           proto::malformed_name(static_cast<proto::Malformed>(i)),
                           grouped(s.malformed[i]));
            first = false;
        }
        o += ")";
    }
    o += "\n";
    fmt::format_to(out, "  endpoints   {} ({} connections), {} payload bytes\n",
                   grouped(s.endpoints), grouped(s.connections), grouped(bytes_));
    fmt::format_to(out, "  messages    {}:", grouped(s.msgs));
    for (unsigned op = 0; op < 5; ++op)
        if (msgs_by_op_[op])
            fmt::format_to(out, " {} {}", msg_op_name(static_cast<MsgOp>(op)),
                           grouped(msgs_by_op_[op]));
    o += "\n              status:";
    for (unsigned st = 0; st < 7; ++st)
        if (msgs_by_status_[st])
            fmt::format_to(out, " {} {}", msg_status_name(static_cast<MsgStatus>(st)),
                           grouped(msgs_by_status_[st]));
    o += "\n";
    if (latency_.count() > 0) {
        fmt::format_to(out,
                       "  latency     {} acked msgs: p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
                       grouped(latency_.count()), duration(latency_.percentile(50)),
                       duration(latency_.percentile(90)), duration(latency_.percentile(99)),
                       duration(latency_.percentile(99.9)), duration(latency_.max()));
    } else {
        o += "  latency     no acknowledged messages\n";
    }
    fmt::format_to(out,
                   "  reliability dup {}, out-of-order {}, gaps {} ({} PSNs missing), NAKs {}, "
                   "RNR NAKs {}\n",
                   grouped(dup_), grouped(ooo_), grouped(gaps_), grouped(missing_), grouped(naks_),
                   grouped(rnr_));
    fmt::format_to(out, "  congestion  CNPs {}, ECN-CE {}\n", grouped(cnps_), grouped(ecn_));

    if (!run.worker_frames.empty()) {
        uint64_t total = 0, most = 0;
        for (uint64_t f : run.worker_frames) {
            total += f;
            most = std::max(most, f);
        }
        const double mean = static_cast<double>(total) / run.worker_frames.size();
        fmt::format_to(out, "  workers     {} ({} sharding), frames per worker:",
                       run.worker_frames.size(), run.shard_policy);
        for (std::size_t w = 0; w < run.worker_frames.size(); ++w) {
            fmt::format_to(out, " {:.1f}%", total ? 100.0 * run.worker_frames[w] / total : 0.0);
            if (w < run.worker_busy_s.size())
                fmt::format_to(out, " ({:.2f} s busy)", run.worker_busy_s[w]);
        }
        fmt::format_to(out, "; max/mean {:.2f}\n", mean > 0 ? most / mean : 0.0);
    }
    if (run.table_full || run.records_dropped || run.evicted || run.msgs_overflow ||
        run.orphans_dropped || run.events_unwindowed)
        fmt::format_to(out,
                       "  limits      table full {} pkts ({} endpoints), records dropped {}, "
                       "evicted idle {}, msgs frozen early {}, held pkts dropped {}, "
                       "events without a window {}\n",
                       grouped(run.table_full), grouped(run.table_full_endpoints),
                       grouped(run.records_dropped), grouped(run.evicted),
                       grouped(run.msgs_overflow), grouped(run.orphans_dropped),
                       grouped(run.events_unwindowed));

    if (!by_bytes_.empty()) {
        fmt::format_to(out, "\nTop {} QPs by bytes received\n", by_bytes_.size());
        fmt::format_to(out, "  {:<28} {:<36} {:>5} {:>14} {:>10} {:>8} {:>10} {:>10}\n", "endpoint",
                       "peer", "tp", "bytes", "pkts", "msgs", "lat p50", "lat p99");
        for (const Ranked& r : by_bytes_) {
            const QpRecord& q = r.qp;
            fmt::format_to(out, "  {:<28} {:<36} {:>5} {:>14} {:>10} {:>8} {:>10} {:>10}\n",
                           endpoint(q.ip, q.qpn), peer(q), transport_name(q.transport),
                           grouped(q.bytes), grouped(q.pkts), grouped(msg_total(q)),
                           q.lat_count ? duration(q.lat_p50_ns) : "-",
                           q.lat_count ? duration(q.lat_p99_ns) : "-");
        }
    }
    if (!by_retx_.empty()) {
        fmt::format_to(out, "\nRetransmission hot spots (dup + out-of-order + missing + NAKs)\n");
        fmt::format_to(out, "  {:<28} {:>10} {:>10} {:>8} {:>10} {:>8} {:>8}\n", "endpoint", "dup",
                       "ooo", "gaps", "missing", "naks", "rnr");
        for (const Ranked& r : by_retx_) {
            const QpRecord& q = r.qp;
            fmt::format_to(out, "  {:<28} {:>10} {:>10} {:>8} {:>10} {:>8} {:>8}\n",
                           endpoint(q.ip, q.qpn), grouped(q.dup_pkts), grouped(q.ooo_pkts),
                           grouped(q.gaps), grouped(q.missing),
                           grouped(nak_total(q.naks) - q.naks.rnr), grouped(q.naks.rnr));
        }
    }
    if (!by_congestion_.empty()) {
        fmt::format_to(out, "\nCongestion hot spots (CNPs received + ECN-CE marked)\n");
        fmt::format_to(out, "  {:<28} {:>10} {:>10} {:>12}\n", "endpoint", "cnps", "ecn_ce",
                       "pkts");
        for (const Ranked& r : by_congestion_) {
            const QpRecord& q = r.qp;
            fmt::format_to(out, "  {:<28} {:>10} {:>10} {:>12}\n", endpoint(q.ip, q.qpn),
                           grouped(q.cnps), grouped(q.ecn_ce), grouped(q.pkts));
        }
    }
    return o;
}

void HumanSummary::render(std::FILE* out, const SummaryCounts& s, const RunInfo& run) const {
    const std::string text = render(s, run);
    std::fwrite(text.data(), 1, text.size(), out);
    std::fflush(out);
}

}  // namespace insert::exporter
