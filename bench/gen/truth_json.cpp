#include "bench/gen/truth_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "dataplane/proto/opcodes.hpp"

namespace insert::gen {

namespace {

using Buffer = fmt::memory_buffer;

template <typename T>
void opt(Buffer& b, const char* key, const std::optional<T>& v) {
    if (v)
        fmt::format_to(std::back_inserter(b), ",\"{}\":{}", key, *v);
    else
        fmt::format_to(std::back_inserter(b), ",\"{}\":null", key);
}

class Writer {
public:
    explicit Writer(std::FILE* f) : f_(f) {}
    Buffer& buf() { return buf_; }
    void maybe_flush() {
        if (buf_.size() > (1u << 20)) flush();
    }
    bool flush() {
        if (!buf_.size()) return ok_;
        if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) ok_ = false;
        buf_.clear();
        return ok_;
    }

private:
    std::FILE* f_;
    Buffer buf_;
    bool ok_ = true;
};

}  // namespace

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, unsigned percent) {
    const std::size_t n = sorted.size();
    const std::size_t rank = (n * percent + 99) / 100;  // ceil(p/100 * n), at least 1
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

bool write_truth_json(const Scenario& sc, const TruthObserver& truth, const TruthFileInfo& info,
                      const std::string& path, std::string& error) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    std::vector<std::string> host_ip;
    for (const HostSpec& h : sc.hosts) host_ip.push_back(h.ip.to_string());

    Writer w(f);
    auto out = std::back_inserter(w.buf());
    fmt::format_to(out, "{{\"generator\":\"insert-gen\",\"scenario\":\"{}\",\"seed\":{},\n\"msgs\":[\n",
                   info.scenario, info.seed);
    const auto& msgs = truth.msgs();
    for (std::size_t i = 0; i < msgs.size(); ++i) {
        const TruthMsg& m = msgs[i];
        fmt::format_to(out, "{{\"type\":\"msg\",\"src_ip\":\"{}\",\"dst_ip\":\"{}\",\"dst_qpn\":{}",
                       host_ip[m.src_host], host_ip[m.dst_host], m.dst_qpn);
        opt(w.buf(), "src_qpn", m.src_qpn);
        fmt::format_to(out, ",\"op\":\"{}\"", op_name(m.op));
        opt(w.buf(), "imm", m.imm);
        opt(w.buf(), "inv", m.inv);
        fmt::format_to(out, ",\"psn_first\":{},\"psn_last\":{},\"pkts\":{},\"bytes\":{}", m.psn_first,
                       m.psn_last, m.pkts, m.bytes);
        opt(w.buf(), "va", m.va);
        opt(w.buf(), "rkey", m.rkey);
        opt(w.buf(), "dma_len", m.dma_len);
        fmt::format_to(out, ",\"t_first_ns\":{},\"t_last_ns\":{}", m.t_first_ns, m.t_last_ns);
        opt(w.buf(), "t_ack_ns", m.t_ack_ns);
        std::optional<uint64_t> latency;
        if (m.t_ack_ns) latency = *m.t_ack_ns - m.t_first_ns;
        opt(w.buf(), "latency_ns", latency);
        fmt::format_to(out, ",\"retx_pkts\":{},\"naks\":{},\"rnr_naks\":{},\"status\":\"{}\",\"gen_msg\":{}}}{}\n",
                       m.retx_pkts, m.naks, m.rnr_naks, status_name(m.status), m.msg_uid,
                       i + 1 < msgs.size() ? "," : "");
        w.maybe_flush();
    }
    fmt::format_to(out, "],\n\"qps\":[\n");

    // Final qp records ordered by (ip, qpn) so the file does not depend on arrival order.
    const auto& eps = truth.endpoints();
    std::vector<std::size_t> order(eps.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        const auto& a = eps[x];
        const auto& b = eps[y];
        if (sc.hosts[a.host].ip != sc.hosts[b.host].ip) return sc.hosts[a.host].ip < sc.hosts[b.host].ip;
        return a.qpn < b.qpn;
    });
    for (std::size_t k = 0; k < order.size(); ++k) {
        const TruthEndpoint& e = eps[order[k]];
        fmt::format_to(out, "{{\"type\":\"qp\",\"ip\":\"{}\",\"qpn\":{}", host_ip[e.host], e.qpn);
        if (e.peer >= 0) {
            const TruthEndpoint& p = eps[e.peer];
            fmt::format_to(out, ",\"peer_ip\":\"{}\",\"peer_qpn\":{},\"pair_by\":\"{}\"", host_ip[p.host], p.qpn,
                           pair_rule_name(e.pair_by));
        } else {
            fmt::format_to(out, ",\"peer_ip\":null,\"peer_qpn\":null,\"pair_by\":null");
        }
        if (e.transport >= 0)
            fmt::format_to(out, ",\"transport\":\"{}\"",
                           proto::transport_name(static_cast<proto::Transport>(e.transport)));
        else
            fmt::format_to(out, ",\"transport\":null");
        fmt::format_to(out,
                       ",\"pkts\":{},\"bytes\":{},\"msgs\":{{\"SEND\":{},\"WRITE\":{},\"READ\":{},\"CMP_SWAP\":{},"
                       "\"FETCH_ADD\":{}}},\"dup_pkts\":{},\"ooo_pkts\":{},\"gaps\":{},\"missing\":{}",
                       e.pkts, e.bytes, e.msgs[0], e.msgs[1], e.msgs[2], e.msgs[3], e.msgs[4], e.dup_pkts,
                       e.ooo_pkts, e.gaps, e.missing);
        fmt::format_to(out, ",\"naks\":{{\"seq\":{},\"rnr\":{},\"inv\":{},\"access\":{},\"op\":{}}}", e.naks.seq,
                       e.naks.rnr, e.naks.inv, e.naks.access, e.naks.op);
        fmt::format_to(out, ",\"cnps\":{},\"ecn_ce\":{},\"t_first_ns\":{},\"t_last_ns\":{}", e.cnps, e.ecn_ce,
                       e.t_first_ns, e.t_last_ns);
        if (e.latencies.empty()) {
            fmt::format_to(out, ",\"lat_p50_ns\":null,\"lat_p99_ns\":null,\"lat_max_ns\":null");
        } else {
            std::vector<uint64_t> lat = e.latencies;
            std::sort(lat.begin(), lat.end());
            fmt::format_to(out, ",\"lat_p50_ns\":{},\"lat_p99_ns\":{},\"lat_max_ns\":{}", nearest_rank(lat, 50),
                           nearest_rank(lat, 99), lat.back());
        }
        fmt::format_to(out, ",\"final\":true}}{}\n", k + 1 < order.size() ? "," : "");
        w.maybe_flush();
    }
    const TruthSummary& s = truth.summary();
    fmt::format_to(out,
                   "],\n\"summary\":{{\"type\":\"summary\",\"pkts\":{},\"roce_pkts\":{},\"non_roce_pkts\":{},"
                   "\"malformed\":{{\"length_mismatch\":{},\"truncated\":{},\"reserved_opcode\":{}}},"
                   "\"endpoints\":{},\"connections\":{},\"msgs\":{}}}\n}}\n",
                   s.pkts, s.roce_pkts, s.non_roce_pkts, s.malformed[0], s.malformed[1], s.malformed[2],
                   s.endpoints, s.connections, s.msgs);
    const bool ok = w.flush();
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) {
        error = path + ": write failed";
        std::remove(path.c_str());
        return false;
    }
    return true;
}

}  // namespace insert::gen
