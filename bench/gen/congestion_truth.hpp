// The exact `congestion` records of a run with host traces: docs/correlation.md section 9
// applied to the deduplicated `msg` records, what the e2e truth's final join made of them
// (their requester and responder incarnations) and the final `qp` records of the truth
// (which equal insert-dp's). Shares no code with correlator/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/gen/e2e_truth.hpp"

namespace insert::gen {

struct CongestionOptions {
    uint64_t bin_ns = 10'000'000;  // --congestion-bin 10 ms
};

// A source application: a traced requester's owner, or (no incarnation) its address alone.
struct CongestionSource {
    uint16_t ip = 0;              // host index of the address
    std::optional<uint32_t> inc;  // an incarnation of the owner (pid comm cgroup host)
    uint64_t msgs = 0, bytes = 0, cnps = 0;
    double bytes_share = 0;  // of the episode's bytes
    // Its messages' network latency in the episode, per message, and outside any episode
    // before it (to the same node; none: nullopt).
    int64_t net_ns_mean = 0, net_ns_p99 = 0;
    std::optional<int64_t> baseline_net_ns_mean, baseline_net_ns_p99;
    // Its p99 above its own baseline p99 (none: above the node's baseline); a victim's is
    // at least 20 us.
    int64_t excess_ns = 0;
    bool victim = false;
};

struct CongestionRecord {
    uint64_t t_start_ns = 0, t_end_ns = 0;
    std::string node;               // the host name, or the address as text
    std::vector<uint16_t> dst_ips;  // host indexes, by address
    uint64_t cnps = 0, ecn_ce = 0, retx_pkts = 0, naks = 0;
    int64_t p99_net_ns = 0, baseline_net_ns = 0;
    uint64_t msgs = 0;
    std::vector<CongestionSource> victims;       // victim, by excess_ns
    std::vector<CongestionSource> contributors;  // by bytes
};

// One message as section 9 counts it.
struct NetSample {
    uint64_t t_first_ns = 0;
    int64_t net_ns = 0;
    bool signal = false;  // retransmitted packets or NAKs
};

// Nearest-rank percentile (the smallest value with at least p% at or below it).
int64_t nearest_rank_percentile(std::vector<int64_t> v, unsigned percent);
// Section 9's bins of one node: the indexes (t_first_ns / bin) of its congested bins,
// ascending, given the node's baseline.
std::vector<uint64_t> congested_bins(const std::vector<NetSample>& node, int64_t baseline,
                                     uint64_t bin_ns);

class CongestionTruth {
  public:
    CongestionTruth(const Scenario& sc, const E2eTruth& e2e, const TruthObserver& truth,
                    const CongestionOptions& opt = {});
    // Sorted by (t_start_ns, node).
    const std::vector<CongestionRecord>& episodes() const { return episodes_; }

  private:
    std::vector<CongestionRecord> episodes_;
};

}  // namespace insert::gen
