// What the join's result means to a reader (docs/correlation.md 6): one `e2e` row per
// matched message with its latency split, the `app` aggregates per process, the `pair`s
// the host's view adds to the dataplane's. Batch runs build them once; the live
// correlator feeds the same aggregator window after window.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "correlator/join/correlation.hpp"
#include "correlator/join/part_stats.hpp"

namespace insert::correlate {

class HostNames;

struct E2eRow {
    const WireMsg* msg = nullptr;
    const WorkRequest* wr = nullptr;
    const Incarnation* requester = nullptr;
    const Incarnation* responder = nullptr;  // null when the target is not traced
    bool resync = false;
    // Observer clock (host times shifted by -theta of their host); kNone when absent.
    int64_t t_post = kNone;
    int64_t t_poll = kNone;
    int64_t t_recv_poll = kNone;
    int64_t t_covered = kNone;  // unsignaled: the covering poll (information only)
    int64_t host_ns = kNone;
    int64_t net_ns = kNone;
    int64_t completion_ns = kNone;
    int64_t total_ns = kNone;
};

// The row of one match of `join`.
E2eRow make_e2e_row(const JoinResult& join, const HostModel& model, const WireMsgs& msgs,
                    const E2eMatch& match);
// Brings the message and work request of a row about to be made into the cache: rows in
// t_first order reach them at random, and their cache misses made make_e2e_row 5% of a
// batch run (perf; under 1% with the prefetch). kRowsAhead rows ahead hides the misses
// behind the rows written in between.
void prefetch_e2e_row(const JoinResult& join, const HostModel& model, const WireMsgs& msgs,
                      const E2eMatch& match);
inline constexpr std::size_t kRowsAhead = 8;
// Rows for every match of `join` (in its order).
std::vector<E2eRow> make_e2e_rows(const JoinResult& join, const HostModel& model,
                                  const WireMsgs& msgs);

struct AppView {
    std::string host;
    Ip ip;
    int32_t pid = 0;
    Comm comm;
    uint64_t cgroup = 0;
    uint64_t qps = 0;
    std::array<uint64_t, 5> msgs{};
    std::array<uint64_t, 5> bytes{};
    PartStats host_ns, net_ns, completion_ns, total_ns;  // completion, total: signaled only
    uint64_t signaled_wrs = 0;
    uint64_t retx_pkts = 0;
    uint64_t naks = 0;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    uint64_t ecn_ce_caused = 0;
    uint64_t unmatched_wr = 0;
};

// The `app` records: (host, ip, pid, comm, cgroup) -> aggregates.
class AppAggregator {
  public:
    void add_row(const E2eRow& row, const HostNames& names);
    void add_unmatched(const Incarnation& q, uint64_t n, const HostNames& names);
    void add_counters(const Incarnation& q, uint64_t cnps, uint64_t ecn_ce, uint64_t ecn_ce_caused,
                      const HostNames& names);
    // Applications with at least one e2e record, in key order.
    std::vector<const AppView*> apps() const;
    std::size_t size() const { return apps().size(); }

    // Live runs keep memory bounded by what is alive (docs/correlation.md 7): an
    // incarnation that ended --ttl ago is forgotten (it cannot match again), and the
    // applications of a process that exited --ttl ago are handed to `final_record` (those
    // with e2e records: their final `app` record) and forgotten.
    void forget(const Incarnation& q);
    void retire_process(uint32_t host, int32_t pid, const HostNames& names,
                        const std::function<void(const AppView&)>& final_record);

  private:
    using Key = std::tuple<std::string, std::array<uint8_t, 16>, int32_t, std::string, uint64_t>;
    // A key to look one up with, without copying the names (one lookup per e2e record).
    using KeyView =
        std::tuple<std::string_view, std::array<uint8_t, 16>, int32_t, std::string_view, uint64_t>;
    struct Entry {
        AppView view;
        bool named = false;
        bool has_e2e = false;
        uint64_t matched_refs = 0;  // entries of matched_ that point here
    };
    // An incarnation with a match, by what makes it and its application (the host by its
    // id, which names one host in the HostNames every call passes): an e2e record finds
    // its entry with one hash lookup instead of an ordered search by names.
    struct Matched {
        uint32_t host = 0;
        int32_t pid = 0;
        uint64_t qp_obj = 0;
        int64_t t_create = 0;
        Ip ip;
        Comm comm;
        uint64_t cgroup = 0;
        friend bool operator==(const Matched&, const Matched&) = default;
    };
    struct MatchedHash {
        std::size_t operator()(const Matched& m) const;
    };
    Entry& entry(const Incarnation& q, const HostNames& names);
    // The entries of incarnations seen lately, by the incarnation's address (a batch run's
    // rows reach a few thousand of them at random): a hit, confirmed on the whole key,
    // saves hashing the key and searching matched_ (~2% of a batch run in `perf`).
    // Emptied when matched_ loses entries.
    struct Recent {
        const Incarnation* q = nullptr;
        Matched key;
        Entry* entry = nullptr;
    };
    static constexpr std::size_t kRecent = 1024;
    Recent& recent(const Incarnation& q) {
        return recent_[reinterpret_cast<uintptr_t>(&q) / sizeof(Incarnation) % kRecent];
    }
    void forget_recent() { std::fill(recent_.begin(), recent_.end(), Recent{}); }

    std::map<Key, Entry, std::less<>> apps_;
    std::unordered_map<Matched, Entry*, MatchedHash> matched_;
    std::vector<Recent> recent_ = std::vector<Recent>(kRecent);
};

// docs/correlation.md 6: per endpoint instance (ip, qpn, t_first_ns) only the latest `qp`
// record (final beats interval, then the larger t_last_ns). Sorts and deduplicates.
void keep_latest_records(WireQps& records);

// Attributes each record to the incarnation alive at its t_first_ns (its own endpoint's,
// and the one connected to it) and adds its counters to `apps`. Returns, per incarnation,
// the latest record of its own endpoint (for `pair`), or null.
std::vector<const WireQp*> attribute_qp_records(const WireQps& records, const HostModel& model,
                                                const std::vector<ClockEstimate>& clocks,
                                                AppAggregator& apps, const HostNames& names);

struct PairView {
    const Incarnation* qp = nullptr;
    const WireQp* dataplane = nullptr;  // the endpoint's latest record
};

// Incarnations whose RTR peer the dataplane did not pair, or paired otherwise.
std::vector<PairView> make_pairs(const HostModel& model,
                                 const std::vector<const WireQp*>& latest_of,
                                 const HostNames& names);

// The batch run's views. Its e2e rows are not kept: one per match of the join, each is
// made as it is written (make_e2e_row), which costs less than the memory of a million.
struct Views {
    AppAggregator apps;
    std::vector<PairView> pairs;  // by (ip, qpn, t_create)
};

// Everything but the e2e rows, which the caller adds to `apps` (add_row) as it writes
// them. `qp_records` is deduplicated in place.
Views make_views(const JoinResult& join, const HostModel& model, WireQps& qp_records,
                 const HostNames& names);

}  // namespace insert::correlate
