// The exact end-to-end truth of a run with host traces: what insert-correlate must report
// (SPEC.md section 10 as docs/correlation.md reads it) when it joins the host traces as
// written (HostTrace, after its losses) with the dataplane records of a perfect observer
// (the truth's `msg` and final `qp` records - what `insert-dp replay` of the pcap reports).
//
// The rules are applied here to those records alone, each commented with the section of
// docs/correlation.md it implements; the generator's own knowledge (which work request
// made which message) is used only to check the result (mispaired()), never to decide it.
// This is a second, independent reading of docs/correlation.md: it shares no code with
// correlator/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bench/gen/grouped.hpp"
#include "bench/gen/host_trace.hpp"
#include "bench/gen/truth.hpp"

namespace insert::gen {

// A QP incarnation (docs/correlation.md section 2).
struct Incarnation {
    uint16_t host = 0;  // clock domain: the trace's `host`
    uint32_t pid = 0;
    uint32_t proc = 0;  // the process as the trace model numbers it (comm, cgroup)
    uint64_t qp = 0;    // the `qp` object
    uint32_t qpn = 0;
    std::optional<uint16_t> ip;               // host index of the address
    int64_t t_create = 0, t_end = INT64_MAX;  // host clock
    std::optional<uint16_t> peer_ip;
    uint32_t dest_qpn = 0;
    std::optional<uint32_t> sq_psn, rq_psn;
    uint64_t pd = 0;         // create_qp's protection domain
    uint32_t qp_access = 0;  // kAccess* of the latest modify_qp that carries it (INIT)
};

// What the final join (section 3-4) says of one deduplicated message: its requester and
// responder incarnations, and its place in its requester's alignment.
struct MsgJoin {
    std::optional<uint32_t> req, resp;
    bool matched = false;
    // Wire-only after the first matched message of its requester in the M order (section
    // 8 `injected_message`).
    bool wire_only_after_match = false;
};

struct Percentiles {
    std::optional<int64_t> p50, p99, max;
};

// One matched (work request, message) pair: an `e2e` record before formatting.
struct E2eRecord {
    uint32_t req = 0;              // requester incarnation
    std::optional<uint32_t> resp;  // responder incarnation
    const TruthMsg* msg = nullptr;
    uint64_t wr_id = 0;
    uint32_t bytes = 0;
    bool signaled = false;
    bool resync = false;
    int64_t t_post_ns = 0;  // observer clock
    std::optional<int64_t> t_poll_ns, t_recv_poll_ns, t_covered_ns;
    // Section 6's latency split; null when an input is null. total_ns = t_poll - t_post on
    // the host's clock, which the shift by theta leaves as it is.
    int64_t t_first() const { return static_cast<int64_t>(msg->t_first_ns); }
    std::optional<int64_t> t_ack() const {
        if (!msg->t_ack_ns) return std::nullopt;
        return static_cast<int64_t>(*msg->t_ack_ns);
    }
    std::optional<int64_t> host_ns() const { return t_first() - t_post_ns; }
    std::optional<int64_t> net_ns() const {
        if (!t_ack()) return std::nullopt;
        return *t_ack() - t_first();
    }
    std::optional<int64_t> completion_ns() const {
        if (!t_ack() || !t_poll_ns) return std::nullopt;
        return *t_poll_ns - *t_ack();
    }
    std::optional<int64_t> total_ns() const {
        if (!t_poll_ns) return std::nullopt;
        return *t_poll_ns - t_post_ns;
    }
    std::optional<WcStatus> wc_status;
    uint32_t wr_uid = 0;  // generator's message behind the work request (checks only)
};

struct ClockRecord {
    uint16_t host = 0;
    std::optional<int64_t> lo, hi;
    int64_t offset = 0;
    const char* source = "none";
    bool consistent = true;
    uint64_t matches = 0;
};

struct AppRecord {
    uint16_t host = 0, ip = 0;
    uint32_t proc = 0;  // pid, comm, cgroup
    uint64_t qps = 0;
    std::array<uint64_t, kOpTypes> msgs{}, bytes{};
    Percentiles host_ns, net_ns, completion_ns, total_ns;
    uint64_t signaled_wrs = 0;  // completion_ns and total_ns are over these
    uint64_t retx_pkts = 0, naks = 0, cnps = 0, ecn_ce = 0, ecn_ce_caused = 0, unmatched_wr = 0;
};

struct PairRecord {
    uint32_t inc = 0;  // ip qpn peer_ip peer_qpn pid comm
    std::optional<PairRule> dp_pair_by;
    std::optional<uint16_t> dp_peer_ip;
    std::optional<uint32_t> dp_peer_qpn;
};

// Section 6 `summary`'s counts of the join (not `inputs`, `bad`, `wall_s`: they describe a
// correlator's run; `late` and `evicted` are 0 in a batch join).
struct E2eSummary {
    uint64_t e2e = 0, exact = 0, resync = 0, unmatched_wr = 0, wire_only = 0;
    uint64_t src_untraced = 0;       // source IP of a traced host, no requester incarnation
    uint64_t src_host_untraced = 0;  // source IP that no host record uses
    uint64_t duplicate_msgs = 0, pair_conflicts = 0, qps_without_ip = 0, recv_matched = 0;
    uint64_t hosts = 0, qps = 0, apps = 0, pairs = 0, trace_drops = 0;
};

class E2eTruth {
  public:
    E2eTruth(const Scenario& sc, const HostTrace& trace, std::span<const TruthMsg> msgs,
             const TruthObserver& truth);

    const std::vector<Incarnation>& incarnations() const { return incs_; }
    const HugeVector<E2eRecord>& e2e() const { return e2e_; }
    const std::vector<AppRecord>& apps() const { return apps_; }
    const std::vector<ClockRecord>& clocks() const { return clocks_; }
    const std::vector<PairRecord>& pairs() const { return pairs_; }
    const E2eSummary& summary() const { return summary_; }
    // For the alert and congestion truth (alert_truth.*, congestion_truth.*): the
    // deduplicated messages (section 1), what the final join made of each, the offsets
    // every time was shifted by (section 5), the incarnations of (ip, qpn).
    const std::vector<const TruthMsg*>& joined_msgs() const { return msgs_; }
    const std::vector<MsgJoin>& msg_join() const { return msg_join_; }
    const std::vector<int64_t>& theta() const { return theta_; }
    std::span<const uint32_t> incarnations_at(uint16_t ip, uint32_t qpn) const;
    // Whether some host record uses the address of host `ip`.
    bool traced_ip(uint16_t ip) const { return traced_ip_[ip]; }
    // Checks against the generator's knowledge: matched pairs whose work request did not
    // make the message although the two could be told apart (family, length, remote
    // address or rkey differ) - the rules failed - and those no rule could tell apart.
    uint64_t mispaired() const { return mispaired_; }
    uint64_t indistinguishable() const { return indistinguishable_; }

  private:
    struct Join;
    // A post_send of W (section 4), and what its completion gave it.
    struct Wr {
        int64_t wall = 0;  // post_send's wall_ns
        uint64_t wr_id = 0;
        OpType fam = OpType::write;
        uint32_t len = 0;
        std::optional<uint64_t> remote_addr;
        std::optional<uint32_t> rkey;
        bool signaled = false;
        uint32_t uid = 0;               // the generator's message behind it (checks only)
        std::optional<int64_t> t_poll;  // its own completion (signaled, or failed)
        std::optional<WcStatus> status;
        std::optional<int64_t> t_covered;  // unsignaled without one: the covering poll
    };
    // A poll_cq record of an incarnation.
    struct Comp {
        int64_t wall = 0;
        uint64_t wr_id = 0;
        WcStatus status = WcStatus::success;
        WcOpcode opcode = WcOpcode::send;
        uint32_t byte_len = 0;
    };
    void read_trace();
    void dedup_msgs();
    void complete_wrs();
    Join join(const std::vector<int64_t>& theta) const;
    std::vector<int64_t> estimate(const Join& j, std::vector<ClockRecord>* out) const;
    std::optional<uint32_t> choose(std::span<const uint32_t> cands, uint64_t t_obs,
                                   const std::vector<int64_t>& theta) const;
    void match_receives(const Join& j, const std::vector<int64_t>& theta);
    void build_records(const Join& j, const std::vector<int64_t>& theta);
    void build_apps(const std::vector<int64_t>& theta);
    void build_pairs(const std::vector<int64_t>& theta);
    std::optional<uint32_t> endpoint_owner(std::span<const uint32_t> cands, const TruthEndpoint& ep,
                                           const std::vector<int64_t>& theta) const;
    void check(const Join& j);

    const Scenario& sc_;
    const HostTrace& trace_;
    std::span<const TruthMsg> all_msgs_;
    const TruthObserver& truth_;
    std::vector<Incarnation> incs_;
    Grouped<Wr> wrs_;      // W per incarnation
    Grouped<Comp> sends_;  // send completions per incarnation
    Grouped<Comp> recvs_;  // receive completions per incarnation
    // Incarnations by (ip, qpn), by (ip, peer ip, dest qpn), by (peer ip, dest qpn).
    KeyIndex by_addr_, by_peer_, by_peer_any_;
    std::vector<uint64_t> unmatched_;                  // unmatched work requests per incarnation
    std::vector<const TruthMsg*> msgs_;                // deduplicated
    std::vector<std::optional<int64_t>> t_recv_poll_;  // by index into msgs_ (host clock)
    HugeVector<E2eRecord> e2e_;
    std::vector<AppRecord> apps_;
    std::vector<ClockRecord> clocks_;
    std::vector<PairRecord> pairs_;
    E2eSummary summary_;
    uint64_t mispaired_ = 0, indistinguishable_ = 0;
    std::vector<bool> traced_ip_;    // by host index: an address some host record uses
    std::vector<MsgJoin> msg_join_;  // by index into msgs_
    std::vector<int64_t> theta_;
};

}  // namespace insert::gen
