// What the join's result means to a reader (docs/correlation.md 6): one `e2e` row per
// matched message with its latency split, the `app` aggregates per process, the `pair`s
// the host's view adds to the dataplane's, and the `clock` per host.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "correlator/join/correlation.hpp"
#include "correlator/output/part_stats.hpp"

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
    int64_t host_ns = kNone;
    int64_t net_ns = kNone;
    int64_t completion_ns = kNone;
    int64_t total_ns = kNone;
};

std::vector<E2eRow> make_e2e_rows(const JoinResult& join, const HostModel& model,
                                  const std::vector<WireMsg>& msgs);

struct AppView {
    std::string host;
    Ip ip;
    int32_t pid = 0;
    Comm comm;
    uint64_t cgroup = 0;
    uint64_t qps = 0;
    std::array<uint64_t, 5> msgs{};
    std::array<uint64_t, 5> bytes{};
    PartStats host_ns, net_ns, completion_ns, total_ns;
    uint64_t retx_pkts = 0;
    uint64_t naks = 0;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    uint64_t ecn_ce_caused = 0;
    uint64_t unmatched_wr = 0;
};

struct PairView {
    const Incarnation* qp = nullptr;
    const WireQp* dataplane = nullptr;  // the endpoint's latest record
};

struct Views {
    std::vector<E2eRow> e2e;
    std::vector<AppView> apps;    // by (host, ip, pid, comm, cgroup)
    std::vector<PairView> pairs;  // by (ip, qpn, t_create)
};

// `qp_records` is deduplicated in place (latest record per endpoint instance).
Views make_views(const JoinResult& join, const HostModel& model, const std::vector<WireMsg>& msgs,
                 std::vector<WireQp>& qp_records, const HostNames& names);

}  // namespace insert::correlate
