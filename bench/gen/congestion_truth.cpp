#include "bench/gen/congestion_truth.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "bench/gen/host_trace_json.hpp"

namespace insert::gen {

namespace {

// Section 9: a bin is congested when its p99 is at least twice the baseline and at least
// this much above it.
constexpr int64_t kMinExcessNs = 20'000;
constexpr unsigned kBaselinePercent = 10, kBinPercent = 99;
// Consecutive congested bins at most this many bins apart are one episode.
constexpr uint64_t kMaxBinStep = 2;
constexpr uint64_t kMinMessages = 3;
// A victim's p99 is this much above its own p99 outside episodes (or, with no messages
// there, above the node's baseline) - what makes a bin slow.
constexpr int64_t kMinVictimExcessNs = 20'000;

int64_t mean_of(const std::vector<int64_t>& v) {
    int64_t sum = 0;
    for (int64_t x : v) sum += x;
    return sum / static_cast<int64_t>(v.size());
}

int64_t net_of(const TruthMsg& m) {
    return static_cast<int64_t>(*m.t_ack_ns) - static_cast<int64_t>(m.t_first_ns);
}

}  // namespace

int64_t nearest_rank_percentile(std::vector<int64_t> v, unsigned percent) {
    const std::size_t rank = std::max<std::size_t>((v.size() * percent + 99) / 100, 1);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(rank - 1), v.end());
    return v[rank - 1];
}

std::vector<uint64_t> congested_bins(const std::vector<NetSample>& node, int64_t baseline,
                                     uint64_t bin_ns) {
    std::map<uint64_t, std::pair<std::vector<int64_t>, bool>> bins;
    for (const NetSample& s : node) {
        auto& [nets, signal] = bins[s.t_first_ns / bin_ns];
        nets.push_back(s.net_ns);
        signal |= s.signal;
    }
    std::vector<uint64_t> out;
    for (auto& [bin, b] : bins) {
        const int64_t p99 = nearest_rank_percentile(b.first, kBinPercent);
        if ((p99 >= 2 * baseline && p99 >= baseline + kMinExcessNs) || b.second) out.push_back(bin);
    }
    return out;
}

CongestionTruth::CongestionTruth(const Scenario& sc, const E2eTruth& e2e,
                                 const TruthObserver& truth, const CongestionOptions& opt) {
    const auto& msgs = e2e.joined_msgs();
    const auto& joins = e2e.msg_join();
    const auto& incs = e2e.incarnations();
    // Every msg with a t_ack_ns counts toward its destination node: its responder
    // incarnation's host, else its dst_ip as text.
    std::map<std::string, std::vector<uint32_t>> by_node;
    for (uint32_t k = 0; k < msgs.size(); ++k) {
        const TruthMsg& m = *msgs[k];
        if (!m.t_ack_ns) continue;
        const std::optional<uint32_t> r = joins[k].resp;
        by_node[r ? trace_host_name(incs[*r].host) : sc.hosts[m.dst_host].ip.to_string()].push_back(
            k);
    }
    // qp records by address, for ECN-CE at the episode's destination addresses.
    const auto& eps = truth.endpoints();
    std::vector<std::vector<uint32_t>> eps_at(sc.hosts.size());
    for (uint32_t e = 0; e < eps.size(); ++e) eps_at[eps[e].host].push_back(e);

    for (const auto& [node, ks] : by_node) {
        std::vector<NetSample> samples;
        std::vector<int64_t> nets;
        for (uint32_t k : ks) {
            const TruthMsg& m = *msgs[k];
            samples.push_back({m.t_first_ns, net_of(m), m.retx_pkts > 0 || m.naks > 0});
            nets.push_back(net_of(m));
        }
        const int64_t baseline = nearest_rank_percentile(nets, kBaselinePercent);
        const std::vector<uint64_t> bins = congested_bins(samples, baseline, opt.bin_ns);
        // The bin spans [first, last] of the node's episodes so far: a source's messages
        // outside them and before an episode are its own baseline there.
        std::vector<std::pair<uint64_t, uint64_t>> spans;
        // Per bin: its source applications, and whether a message retransmitted or was
        // NAKed. An episode starts and ends with a bin of two sources or more, or signalled:
        // at its edges, one application alone being slow is it queueing behind itself.
        std::map<uint64_t, std::set<std::tuple<uint16_t, int, uint32_t>>> bin_sources;
        std::map<uint64_t, bool> bin_signal;
        for (uint32_t k : ks) {
            const TruthMsg& m = *msgs[k];
            const std::optional<uint32_t> req = joins[k].req;
            bin_sources[m.t_first_ns / opt.bin_ns].insert(
                req ? std::make_tuple(m.src_host, static_cast<int>(incs[*req].host), incs[*req].pid)
                    : std::make_tuple(m.src_host, -1, 0u));
            bin_signal[m.t_first_ns / opt.bin_ns] |= m.retx_pkts > 0 || m.naks > 0;
        }
        const auto edge = [&](uint64_t bin) {
            return bin_sources[bin].size() >= 2 || bin_signal[bin];
        };
        for (std::size_t i = 0; i < bins.size();) {
            std::size_t j = i + 1;
            while (j < bins.size() && bins[j] - bins[j - 1] <= kMaxBinStep) ++j;
            std::size_t from = i, to = j;
            i = j;
            while (from + 1 < to && !edge(bins[from])) ++from;
            while (to - 1 > from && !edge(bins[to - 1])) --to;
            if (!edge(bins[from])) continue;
            // The episode: congested bins [from, to); its messages are those of these bins.
            const std::set<uint64_t> mine(bins.begin() + static_cast<std::ptrdiff_t>(from),
                                          bins.begin() + static_cast<std::ptrdiff_t>(to));
            CongestionRecord c;
            c.t_start_ns = bins[from] * opt.bin_ns;
            c.t_end_ns = (bins[to - 1] + 1) * opt.bin_ns;
            c.node = node;
            c.baseline_net_ns = baseline;
            const uint64_t first_bin = bins[from], last_bin = bins[to - 1];
            std::map<uint64_t, std::vector<int64_t>> bin_nets;
            // Sources by (address, host, pid) - untraced: the address alone - with their
            // requester endpoints (address, QPN).
            std::map<std::tuple<uint16_t, int, uint32_t>, CongestionSource> sources;
            std::map<std::tuple<uint16_t, int, uint32_t>, std::set<std::pair<uint16_t, uint32_t>>>
                endpoints;
            std::map<std::tuple<uint16_t, int, uint32_t>, std::vector<int64_t>> nets_in, nets_out;
            std::set<uint16_t> dst;
            const auto source_of = [&](uint32_t k) {
                const TruthMsg& m = *msgs[k];
                const std::optional<uint32_t> req = joins[k].req;
                return req ? std::make_tuple(m.src_host, static_cast<int>(incs[*req].host),
                                             incs[*req].pid)
                           : std::make_tuple(m.src_host, -1, 0u);
            };
            for (uint32_t k : ks) {
                const uint64_t bin = msgs[k]->t_first_ns / opt.bin_ns;
                const bool in_span = std::any_of(spans.begin(), spans.end(), [&](const auto& sp) {
                    return bin >= sp.first && bin <= sp.second;
                });
                if (bin < first_bin && !in_span) nets_out[source_of(k)].push_back(net_of(*msgs[k]));
            }
            for (uint32_t k : ks) {
                const TruthMsg& m = *msgs[k];
                if (!mine.contains(m.t_first_ns / opt.bin_ns)) continue;
                ++c.msgs;
                c.retx_pkts += m.retx_pkts;
                c.naks += m.naks;
                bin_nets[m.t_first_ns / opt.bin_ns].push_back(net_of(m));
                dst.insert(m.dst_host);
                const std::optional<uint32_t> req = joins[k].req;
                const auto key = source_of(k);
                CongestionSource& s = sources[key];
                s.ip = m.src_host;
                if (req && !s.inc) s.inc = req;
                ++s.msgs;
                // Payload toward the node; a READ counts its dma_len.
                s.bytes += m.op == OpType::read && m.dma_len ? *m.dma_len : m.bytes;
                nets_in[key].push_back(net_of(m));
                const std::optional<uint32_t> qpn = req ? std::optional(incs[*req].qpn) : m.src_qpn;
                if (qpn) endpoints[key].insert({m.src_host, *qpn});
            }
            if (c.msgs < kMinMessages) continue;
            for (auto& [bin, v] : bin_nets)
                c.p99_net_ns = std::max(c.p99_net_ns, nearest_rank_percentile(v, kBinPercent));
            // A qp record (the endpoint's whole life) counts where its life overlaps.
            auto overlaps = [&](const TruthEndpoint& e) {
                return e.t_first_ns < c.t_end_ns && e.t_last_ns >= c.t_start_ns;
            };
            std::set<std::pair<uint16_t, uint32_t>> all_eps;
            for (auto& [key, s] : sources) {
                for (const auto& [ip, qpn] : endpoints[key]) {
                    const int32_t e = truth.find(ip, qpn);
                    if (e < 0 || !overlaps(eps[static_cast<std::size_t>(e)])) continue;
                    const uint64_t n = eps[static_cast<std::size_t>(e)].cnps;
                    s.cnps += n;
                    if (all_eps.insert({ip, qpn}).second) c.cnps += n;
                }
                const std::vector<int64_t>& in = nets_in[key];
                s.net_ns_mean = mean_of(in);
                s.net_ns_p99 = nearest_rank_percentile(in, kBinPercent);
                if (const auto out = nets_out.find(key); out != nets_out.end()) {
                    s.baseline_net_ns_mean = mean_of(out->second);
                    s.baseline_net_ns_p99 = nearest_rank_percentile(out->second, kBinPercent);
                    s.excess_ns = s.net_ns_p99 - *s.baseline_net_ns_p99;
                } else {
                    s.excess_ns = s.net_ns_p99 - baseline;
                }
                s.victim = s.excess_ns >= kMinVictimExcessNs;
            }
            uint64_t episode_bytes = 0;
            for (const auto& [key, s] : sources) episode_bytes += s.bytes;
            for (auto& [key, s] : sources)
                s.bytes_share = episode_bytes ? static_cast<double>(s.bytes) /
                                                    static_cast<double>(episode_bytes)
                                              : 0;
            for (uint16_t ip : dst)
                for (uint32_t e : eps_at[ip])
                    if (overlaps(eps[e])) c.ecn_ce += eps[e].ecn_ce;
            const bool signal = c.cnps > 0 || c.ecn_ce > 0 || c.retx_pkts > 0 || c.naks > 0;
            if (sources.size() < 2 && !signal) continue;  // one transfer behind itself
            spans.emplace_back(first_bin, last_bin);
            c.dst_ips.assign(dst.begin(), dst.end());
            std::sort(c.dst_ips.begin(), c.dst_ips.end(),
                      [&](uint16_t a, uint16_t b) { return sc.hosts[a].ip < sc.hosts[b].ip; });
            // Ties of bytes or added latency: by address, then pid (the untraced first).
            auto identity = [&](const CongestionSource& s) {
                return std::make_tuple(sc.hosts[s.ip].ip, s.inc.has_value(),
                                       s.inc ? incs[*s.inc].pid : 0u);
            };
            for (auto& [key, s] : sources) c.contributors.push_back(s);
            std::sort(c.contributors.begin(), c.contributors.end(),
                      [&](const CongestionSource& a, const CongestionSource& b) {
                          if (a.bytes != b.bytes) return a.bytes > b.bytes;
                          return identity(a) < identity(b);
                      });
            for (const CongestionSource& s : c.contributors)
                if (s.victim) c.victims.push_back(s);
            std::stable_sort(c.victims.begin(), c.victims.end(),
                             [&](const CongestionSource& a, const CongestionSource& b) {
                                 if (a.excess_ns != b.excess_ns) return a.excess_ns > b.excess_ns;
                                 return identity(a) < identity(b);
                             });
            episodes_.push_back(std::move(c));
        }
    }
    std::stable_sort(episodes_.begin(), episodes_.end(),
                     [](const CongestionRecord& a, const CongestionRecord& b) {
                         return std::tie(a.t_start_ns, a.node) < std::tie(b.t_start_ns, b.node);
                     });
}

}  // namespace insert::gen
