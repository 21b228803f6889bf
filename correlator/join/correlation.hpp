// The batch join of SPEC 10 / docs/correlation.md 3-5: wire messages to requester and
// responder QP incarnations, work requests to messages (with resynchronisation),
// completions, receive completions, and the host clock offsets. The result is a function
// of the input records alone - not of their order, the thread count or how the inputs
// were split - because every step sorts into a canonical order first.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "correlator/join/clock.hpp"
#include "correlator/join/host_model.hpp"

namespace insert::correlate {

class HostNames;

struct E2eMatch {
    uint32_t msg = 0;  // index into the (deduplicated, sorted) messages
    uint32_t qp = 0;   // requester incarnation
    uint32_t wr = 0;   // index into that incarnation's work requests
    bool resync = false;
};

struct JoinCounts {
    uint64_t unmatched_wr = 0;
    uint64_t wire_only = 0;
    uint64_t src_untraced = 0;       // source IP of a traced host, no QP there
    uint64_t src_host_untraced = 0;  // source IP that no trace mentions
    uint64_t duplicate_msgs = 0;
    uint64_t pair_conflicts = 0;
    uint64_t qps_without_ip = 0;
    uint64_t recv_matched = 0;
};

// Several joins' counts together (an instance's partitions on the bus).
inline JoinCounts& operator+=(JoinCounts& a, const JoinCounts& b) {
    a.unmatched_wr += b.unmatched_wr;
    a.wire_only += b.wire_only;
    a.src_untraced += b.src_untraced;
    a.src_host_untraced += b.src_host_untraced;
    a.duplicate_msgs += b.duplicate_msgs;
    a.pair_conflicts += b.pair_conflicts;
    a.qps_without_ip += b.qps_without_ip;
    a.recv_matched += b.recv_matched;
    return a;
}

// Per message: how its requester was found (docs/correlation.md 3).
enum class SourceState : uint8_t { assigned, assigned_conflict, untraced_qp, untraced_host };

// Per message with a requester: matched to a work request, or wire-only before the QP's
// first match (its data path not yet shown to be traced), or wire-only after one.
enum class WireState : uint8_t { no_requester, matched, wire_only_uncovered, wire_only_covered };

struct JoinResult {
    std::vector<E2eMatch> matches;       // by (t_first_ns, src_ip, src_qpn, psn_first)
    std::vector<int64_t> requester;      // per message: incarnation or -1
    std::vector<SourceState> source;     // per message
    std::vector<WireState> wire;         // per message
    std::vector<uint32_t> position;      // per message: its place in its requester's order
    HugeVector<int64_t> responder;       // per message: incarnation or -1
    HugeVector<int64_t> t_recv_poll;     // per message: responder's host time or kNone
    std::vector<int64_t> recv_event;     // per message: that completion's host record or -1
    std::vector<uint64_t> unmatched_wr;  // per incarnation
    std::vector<ClockEstimate> clocks;   // per host id
    JoinCounts counts;
};

// What the live correlator's earlier windows decided that the join of a later one needs,
// so that it decides as the batch join over the whole input would.
struct JoinHistory {
    std::vector<ClockBounds> bounds;  // per host id (may be shorter): messages emitted
    // Incarnations that had a matched message emitted: a wire-only message of theirs still
    // held comes after it in their order, so it is covered (docs/correlation.md 4).
    using Key = std::tuple<uint32_t, int32_t, uint64_t, int64_t>;  // host, pid, qp, t_create
    std::set<Key> covered;
    static Key key(const Incarnation& q) { return {q.host, q.pid, q.qp_obj, q.t_create}; }
};

// `msgs` is deduplicated and sorted in place (docs/correlation.md 1); `model`'s work
// requests get their completions. `history`: the live correlator's earlier windows.
JoinResult join_batch(HostModel& model, WireMsgs& msgs, const HostNames& names,
                      const ClockPolicy& policy, const JoinHistory* history = nullptr);

}  // namespace insert::correlate
