// Congestion attribution (SPEC 10 `congestion`, docs/correlation.md 9): per destination
// node (the traced host of the responders, else the destination IP: the receiver whose
// path is congested), messages are put in time bins; a bin whose network latency rises
// well above the destination's baseline, or that has retransmissions or NAKs, is
// congested; runs of congested bins are episodes, kept when several applications
// contend or the network signalled (CNPs, ECN-CE, retransmissions, NAKs) - one bulk
// transfer queueing behind itself is not congestion. Each episode names its victims
// (applications whose messages gained network latency) and its contributors
// (applications that sent bytes toward it), per process and cgroup.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "correlator/input/records.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/part_stats.hpp"
#include "correlator/join/qp_owner.hpp"

namespace insert::correlate {

struct CongestionOptions {
    int64_t bin_ns = 10'000'000;    // 10 ms bins
    int64_t min_added_ns = 20'000;  // a bin's p99 must exceed the baseline by this...
    unsigned latency_factor = 2;    // ... and be this many times the baseline
    uint64_t min_msgs = 3;          // an episode has at least this many messages
};

// An application as congestion reports name it (untraced sources: ip only).
struct AppRef {
    QpOwner owner;
    Ip ip;
    // Field by field, without copies: every message of a run is looked up by it (a tuple
    // of copied strings made this a seventh of insert-correlate's instructions).
    friend std::strong_ordering operator<=>(const AppRef& a, const AppRef& b) {
        if (const int c = std::memcmp(a.ip.bytes.data(), b.ip.bytes.data(), a.ip.bytes.size()))
            return c <=> 0;
        if (const auto c = a.owner.host <=> b.owner.host; c != 0) return c;
        if (const auto c = a.owner.pid <=> b.owner.pid; c != 0) return c;
        if (const auto c = a.owner.comm.view() <=> b.owner.comm.view(); c != 0) return c;
        return a.owner.cgroup <=> b.owner.cgroup;
    }
    friend bool operator==(const AppRef& a, const AppRef& b) { return (a <=> b) == 0; }
};

// The network latency of one application's messages to one node.
struct AppNet {
    uint64_t msgs = 0;
    int64_t sum_ns = 0;
    PartStats stats;
    void add(int64_t net_ns) {
        ++msgs;
        sum_ns += net_ns;
        stats.add(net_ns);
    }
    void merge(const AppNet& other) {
        msgs += other.msgs;
        sum_ns += other.sum_ns;
        stats.merge(other.stats);
    }
    int64_t mean_ns() const { return msgs ? sum_ns / static_cast<int64_t>(msgs) : 0; }
};

// An application in an episode (docs/correlation.md 9): what it sent and what its
// messages' network latency was there, per message, against its own latency to the same
// node outside any episode before this one (SPEC 10 v1.3: a sum over messages is no
// latency).
struct EpisodeApp {
    AppRef app;
    uint64_t msgs = 0;
    uint64_t bytes = 0;
    double bytes_share = 0;  // of the episode's bytes, 0..1
    uint64_t cnps = 0;       // CNPs its QPs received (from `qp` records)
    int64_t net_ns_mean = 0;
    int64_t net_ns_p99 = 0;
    // Its own latency outside episodes; nullopt when it sent nothing to the node there.
    std::optional<int64_t> baseline_net_ns_mean;
    std::optional<int64_t> baseline_net_ns_p99;
    bool victim = false;
    // What made it a victim: its p99 above its own baseline p99, or (none) above the
    // node's baseline; the victims' order.
    int64_t excess_ns = 0;
};

struct CongestionEpisode {
    std::string node;         // the destination host (or IP)
    std::vector<Ip> dst_ips;  // its addresses the episode's messages went to
    int64_t t_start_ns = 0;
    int64_t t_end_ns = 0;
    uint64_t msgs = 0;
    int64_t baseline_net_ns = 0;
    // Signals.
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    uint64_t retx_pkts = 0;
    uint64_t naks = 0;
    int64_t p99_net_ns = 0;
    std::vector<EpisodeApp> victims;       // by added latency per message
    std::vector<EpisodeApp> contributors;  // every source application, by bytes
};

class CongestionTracker {
  public:
    explicit CongestionTracker(CongestionOptions options) : options_(options) {}
    // recent_ points into this tracker's own maps.
    CongestionTracker(const CongestionTracker&) = delete;
    CongestionTracker& operator=(const CongestionTracker&) = delete;

    // One wire message to `node`; `app` is its requester's application (or the source IP
    // alone), `src_qpn` its requester QP when known (kNone otherwise). `same_app`: `app` is
    // the previous call's, unchanged (nearly always: messages come grouped by requester),
    // so it is not compared again; `same_node` the same for `node`.
    void add(const WireMsg& m, std::string_view node, int64_t src_qpn, const AppRef& app,
             bool same_app = false, bool same_node = false);
    // ECN-CE and CNP counters of an endpoint instance (a `qp` record), for the episodes
    // it overlaps: ECN-CE at the destination, CNPs at a contributor.
    void add_counters(const WireQp& record);

    // Every episode of the run (batch runs, and what a live run has left at its end).
    std::vector<CongestionEpisode> episodes() const;
    // Live runs: the episodes that ended before `before_ns` (no message older than it is
    // still to come), and their bins and counters forgotten - memory stays bounded by the
    // bins of the last --ttl. Each is judged against its destination's baseline so far.
    std::vector<CongestionEpisode> settle(int64_t before_ns);
    // Live runs: the episodes still going on at `before_ns` (a later bin could extend them)
    // that are episodes already, as they stand - what is fired before it ends.
    std::vector<CongestionEpisode> ongoing(int64_t before_ns) const;

  private:
    using Endpoint = std::pair<std::array<uint8_t, 16>, uint32_t>;  // (ip, qpn)
    struct BinApp {
        uint64_t bytes = 0;
        AppNet net;
    };
    using AppNets = std::map<AppRef, AppNet>;
    struct Bin {
        PartStats net;
        uint64_t msgs = 0;
        uint64_t retx = 0;
        uint64_t naks = 0;
        std::map<AppRef, BinApp> apps;
        // Each app's requester endpoints (ip, qpn) that sent these messages: the QPs whose
        // CNPs count toward the episode.
        std::map<AppRef, std::set<Endpoint>> senders;
        std::set<std::array<uint8_t, 16>> dst_ips;
    };
    struct Destination {
        PartStats net;  // every message's net latency: the baseline
        std::map<int64_t, Bin> bins;
        // Live runs: each app's messages in the bins settled outside any episode (the
        // bins themselves are gone), its own baseline for the episodes still to come.
        AppNets outside;
    };
    // The entries the last message went to. Consecutive messages (in the join's order: by
    // source, destination and QP) nearly always go to the same ones, and std::map entries
    // never move: each lookup below is made once per run of them, not per message.
    struct Recent {
        Destination* dst = nullptr;
        std::string node;
        Bin* bin = nullptr;  // of dst
        int64_t bin_key = 0;
        bool has_dst_ip = false;  // inserted into bin's dst_ips
        std::array<uint8_t, 16> dst_ip{};
        const AppRef* app_key = nullptr;        // of bin's apps
        BinApp* app = nullptr;                  // of bin, for *app_key
        std::set<Endpoint>* senders = nullptr;  // of bin, for app
        Endpoint sender{};                      // inserted into senders
    };
    using BinIter = std::map<int64_t, Bin>::const_iterator;
    // The episodes in d's bins before key `until` (kForever: all); returns the key of the
    // first bin still undecided (a run a later bin could extend), or `until`. The bins it
    // decides are outside any episode go into `outside` (d's own in settle(), a copy
    // elsewhere): the apps' baselines for the episodes after them.
    int64_t decide(const std::string& node, const Destination& d, int64_t until, AppNets& outside,
                   std::vector<CongestionEpisode>* ongoing,
                   std::vector<CongestionEpisode>& out) const;
    CongestionEpisode make_episode(const std::string& node, BinIter first, BinIter last,
                                   int64_t baseline, const AppNets& outside) const;

    CongestionOptions options_;
    std::map<std::string, Destination, std::less<>> dsts_;
    Recent recent_;
    WireQps counters_;
};

// Feeds every message of a join (with `only`: those it marks) with its requester's
// application.
void feed_congestion(CongestionTracker& tracker, const WireMsgs& msgs, const JoinResult& join,
                     const HostModel& model, const HostNames& names,
                     const std::vector<bool>* only = nullptr);

}  // namespace insert::correlate
