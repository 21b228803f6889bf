#include "correlator/join/correlation.hpp"

#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <compare>
#include <map>
#include <tuple>

#include "correlator/input/host_names.hpp"
#include "correlator/join/align.hpp"
#include "correlator/join/completions.hpp"
#include "correlator/join/qp_index.hpp"
#include "correlator/join/run_sort.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::correlate {

namespace {

// docs/correlation.md 1: the canonical order of messages, with duplicates adjacent.
auto msg_key(const WireMsg& m) {
    return std::tie(m.src_ip.bytes, m.dst_ip.bytes, m.dst_qpn, m.psn_first, m.op, m.t_first,
                    m.t_last, m.t_ack, m.bytes, m.psn_last, m.status, m.src_qpn, m.va, m.rkey,
                    m.dma_len, m.imm, m.pkts, m.retx_pkts, m.naks, m.rnr_naks);
}

// Two observers see one message within microseconds; the same key later is the QPN and
// PSN used again (docs/correlation.md 1).
constexpr int64_t kDuplicateWindowNs = 1'000'000'000;

bool same_key(const WireMsg& a, const WireMsg& b) {
    return a.src_ip == b.src_ip && a.dst_ip == b.dst_ip && a.dst_qpn == b.dst_qpn &&
           a.psn_first == b.psn_first && a.op == b.op;
}

// The e2e records' order: (t_first_ns, src_ip, src_qpn, psn_first), then the message.
// Sorted on 24-byte keys of integers gathered once: the source (src_ip, src_qpn) as its rank
// among the run's sources. Comparing the addresses' bytes in each comparison (a memcmp
// call) and moving 64-byte keys made this sort a twentieth of a batch run.
void order_matches(std::vector<E2eMatch>& matches, const WireMsgs& msgs, const HostModel& model) {
    struct Source {
        std::array<uint8_t, 16> ip;
        uint32_t qpn;
        auto operator<=>(const Source&) const = default;
    };
    struct Key {
        int64_t t_first;
        uint64_t source_psn;  // the source's id, then its rank (high half); psn_first
        uint32_t msg;
        uint32_t index;  // into matches
    };
    std::vector<Key> keys(matches.size());
    // Matches come grouped by requester, so a source is looked up when it changes.
    std::map<Source, uint64_t> id_of;
    Source last{};
    uint64_t last_id = 0;
    for (std::size_t i = 0; i < matches.size(); ++i) {
        const E2eMatch& e = matches[i];
        const WireMsg& m = msgs[e.msg];
        const Source source{m.src_ip.bytes, model.qps[e.qp].qpn};
        if (i == 0 || source != last) {
            last = source;
            last_id = id_of.try_emplace(source, id_of.size()).first->second;
        }
        keys[i] = {m.t_first, last_id << 32 | m.psn_first, e.msg, static_cast<uint32_t>(i)};
    }
    std::vector<uint64_t> rank(id_of.size());
    uint64_t next = 0;
    for (const auto& [source, id] : id_of) rank[id] = next++;  // the map walks in order
    for (Key& k : keys)
        k.source_psn = rank[k.source_psn >> 32] << 32 | (k.source_psn & 0xFFFFFFFFu);
    sort_runs(keys, [](const Key& a, const Key& b) {
        if (a.t_first != b.t_first) return a.t_first < b.t_first;
        if (a.source_psn != b.source_psn) return a.source_psn < b.source_psn;
        return a.msg < b.msg;
    });
    std::vector<E2eMatch> sorted(matches.size());
    for (std::size_t i = 0; i < keys.size(); ++i) sorted[i] = matches[keys[i].index];
    matches.swap(sorted);
}

uint64_t dedupe(WireMsgs& msgs) {
    tbb::parallel_sort(msgs.begin(), msgs.end(),
                       [](const WireMsg& a, const WireMsg& b) { return msg_key(a) < msg_key(b); });
    std::size_t kept = 0;
    for (std::size_t i = 0; i < msgs.size(); ++i) {
        const bool duplicate = kept > 0 && same_key(msgs[kept - 1], msgs[i]) &&
                               msgs[i].t_first - msgs[kept - 1].t_first < kDuplicateWindowNs;
        if (!duplicate)
            msgs[kept++] = msgs[i];
        else  // live: a copy that arrived later must not be checked again
            msgs[kept - 1].checked |= msgs[i].checked;
    }
    const uint64_t removed = msgs.size() - kept;
    msgs.resize(kept);
    return removed;
}

// What a work request or a message says about the operation, in one comparable form
// (docs/correlation.md 4, Agree): family, length, and for RDMA/atomics address and key.
struct Signature {
    Op op = Op::send;
    uint64_t len = 0;
    int64_t va = kNone;
    int64_t rkey = kNone;
    // A message that never completed whose length is the bytes seen (no RETH length): its
    // last packets may be missing, so a request at least that long agrees with it.
    bool partial = false;
};

// Does request `w` agree with message `m` (docs/correlation.md 4)?
bool agrees(const Signature& w, const Signature& m) {
    if (w.op != m.op || w.va != m.va || w.rkey != m.rkey) return false;
    return w.len == m.len || (m.partial && m.len <= w.len);
}

constexpr uint64_t kNoLength = UINT64_MAX;  // agrees with nothing a request can say

Signature signature(const WorkRequest& w) {
    Signature s{w.family, w.len, kNone, kNone};
    if (w.family != Op::send) {
        s.va = w.remote_addr;
        s.rkey = w.rkey;
    }
    return s;
}

Signature signature(const WireMsg& m) {
    Signature s{m.op, m.bytes, kNone, kNone};
    const bool unfinished = m.status != MsgStatus::ok;
    switch (m.op) {
        case Op::send:
            s.partial = unfinished;
            return s;
        case Op::write:
            // The RETH length: bytes can be short when packets were never observed.
            if (m.dma_len != kNone)
                s.len = static_cast<uint64_t>(m.dma_len);
            else
                s.partial = unfinished;
            break;
        case Op::read:
            s.len = m.dma_len == kNone ? kNoLength : static_cast<uint64_t>(m.dma_len);
            break;
        case Op::cmp_swap:
        case Op::fetch_add:
            s.len = 8;
            break;
        case Op::count:
            break;
    }
    s.va = m.va;
    s.rkey = m.rkey;
    return s;
}

// The join's message order for one QP (docs/correlation.md 4): PSN distance from the
// QP's starting PSN (else from its earliest message), then first observation.
void order_by_psn(std::vector<uint32_t>& list, const WireMsgs& msgs, bool has_base, uint32_t base) {
    if (list.empty()) return;
    if (!has_base) {
        const auto first = *std::min_element(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
            return std::tie(msgs[a].t_first, msgs[a].psn_first, a) <
                   std::tie(msgs[b].t_first, msgs[b].psn_first, b);
        });
        base = msgs[first].psn_first;
    }
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        const uint32_t da = (msgs[a].psn_first - base) & proto::kPsnMask;
        const uint32_t db = (msgs[b].psn_first - base) & proto::kPsnMask;
        return std::tie(da, msgs[a].t_first, a) < std::tie(db, msgs[b].t_first, b);
    });
}

struct Assignment {
    std::vector<int64_t> requester;  // per message
    std::vector<SourceState> source;
    bool ambiguous = false;  // some message had several candidate QPNs
    uint64_t src_untraced = 0;
    uint64_t src_host_untraced = 0;
    uint64_t pair_conflicts = 0;
};

// docs/correlation.md 3: the requester incarnation of every message, host times from the
// observer's by `theta` (per host id).
Assignment assign_requesters(const WireMsgs& msgs, const HostModel& model, const QpIndex& index,
                             const std::vector<int64_t>& theta) {
    Assignment a;
    a.requester.assign(msgs.size(), -1);
    a.source.assign(msgs.size(), SourceState::assigned);
    std::atomic<uint64_t> untraced{0}, host_untraced{0}, conflicts{0};
    std::atomic<bool> ambiguous{false};
    tbb::parallel_for(std::size_t{0}, msgs.size(), [&](std::size_t i) {
        const WireMsg& m = msgs[i];
        const std::vector<uint32_t>* candidates = &index.with_peer(m.src_ip, m.dst_ip, m.dst_qpn);
        if (candidates->empty() && m.src_qpn != kNone)
            candidates = &index.at_endpoint(m.src_ip, static_cast<uint32_t>(m.src_qpn));
        else if (!candidates->empty() && m.src_qpn != kNone &&
                 std::none_of(candidates->begin(), candidates->end(),
                              [&](uint32_t q) { return model.qps[q].qpn == m.src_qpn; })) {
            conflicts.fetch_add(1, std::memory_order_relaxed);
            a.source[i] = SourceState::assigned_conflict;
        }
        const int64_t host = index.host_of(m.src_ip);
        if (candidates->empty()) {
            (host >= 0 ? untraced : host_untraced).fetch_add(1, std::memory_order_relaxed);
            a.source[i] = host >= 0 ? SourceState::untraced_qp : SourceState::untraced_host;
            return;
        }
        // One candidate: the message is its, whatever the clocks say (section 3's time
        // rule chooses among several).
        if (candidates->size() == 1) {
            a.requester[i] = candidates->front();
            return;
        }
        ambiguous.store(true, std::memory_order_relaxed);
        const uint32_t h = model.qps[candidates->front()].host;
        const int64_t pick = index.pick(*candidates, m.t_first + theta[h]);
        if (pick < 0) {
            untraced.fetch_add(1, std::memory_order_relaxed);
            a.source[i] = SourceState::untraced_qp;
            return;
        }
        a.requester[i] = pick;
    });
    a.ambiguous = ambiguous.load();
    a.src_untraced = untraced.load();
    a.src_host_untraced = host_untraced.load();
    a.pair_conflicts = conflicts.load();
    return a;
}

struct RequesterJoin {
    std::vector<std::vector<E2eMatch>> matches;  // per incarnation
    std::vector<WireState> wire;                 // per message
    std::vector<uint32_t> position;              // per message
    std::vector<uint64_t> unmatched_wr;          // per incarnation
    std::vector<uint64_t> wire_only;             // per incarnation
    std::vector<ClockBounds> bounds;             // per host id
};

// Groups message indexes by their incarnation (counting sort: deterministic).
template <class Owners>
std::vector<std::vector<uint32_t>> group_by(const Owners& owner, std::size_t n) {
    std::vector<std::vector<uint32_t>> groups(n);
    for (uint32_t i = 0; i < owner.size(); ++i)
        if (owner[i] >= 0) groups[static_cast<std::size_t>(owner[i])].push_back(i);
    return groups;
}

RequesterJoin join_requesters(const HostModel& model, const WireMsgs& msgs,
                              const std::vector<int64_t>& requester, std::size_t hosts,
                              const JoinHistory* history) {
    const std::size_t n = model.qps.size();
    RequesterJoin r;
    r.matches.resize(n);
    r.wire.assign(msgs.size(), WireState::no_requester);
    r.position.assign(msgs.size(), 0);
    r.unmatched_wr.assign(n, 0);
    r.wire_only.assign(n, 0);
    std::vector<std::vector<uint32_t>> per_qp = group_by(requester, n);
    tbb::parallel_for(std::size_t{0}, n, [&](std::size_t q) {
        const Incarnation& inc = model.qps[q];
        std::vector<uint32_t>& list = per_qp[q];
        order_by_psn(list, msgs, inc.has_sq_psn, inc.sq_psn);
        std::vector<Signature> wr_sig(inc.wrs.size()), msg_sig(list.size());
        for (std::size_t i = 0; i < inc.wrs.size(); ++i) wr_sig[i] = signature(inc.wrs[i]);
        for (std::size_t j = 0; j < list.size(); ++j) msg_sig[j] = signature(msgs[list[j]]);
        const Alignment a = align(wr_sig.size(), msg_sig.size(), [&](std::size_t i, std::size_t j) {
            return agrees(wr_sig[i], msg_sig[j]);
        });
        r.unmatched_wr[q] = a.unmatched_a.size();
        r.wire_only[q] = a.unmatched_b.size();
        r.matches[q].reserve(a.pairs.size());
        std::vector<bool> matched(list.size(), false);
        for (const AlignedPair& p : a.pairs) {
            r.matches[q].push_back({list[p.b], static_cast<uint32_t>(q), p.a, p.resync});
            matched[p.b] = true;
        }
        // Messages are disjoint between incarnations: each task writes only its own.
        bool covered = history && history->covered.count(JoinHistory::key(inc));
        for (std::size_t j = 0; j < list.size(); ++j) {
            r.position[list[j]] = static_cast<uint32_t>(j);
            covered = covered || matched[j];
            r.wire[list[j]] = matched[j] ? WireState::matched
                              : covered  ? WireState::wire_only_covered
                                         : WireState::wire_only_uncovered;
        }
    });
    r.bounds.resize(hosts);
    for (std::size_t q = 0; q < n; ++q) {
        const Incarnation& inc = model.qps[q];
        for (const E2eMatch& e : r.matches[q]) {
            const WorkRequest& w = inc.wrs[e.wr];
            const WireMsg& m = msgs[e.msg];
            r.bounds[inc.host].add(w.wall, m.t_first, w.t_poll, m.t_ack);
        }
    }
    return r;
}

std::vector<ClockEstimate> estimate_all(const std::vector<ClockBounds>& bounds,
                                        const std::vector<ClockBounds>& prior,
                                        const HostNames& names, const ClockPolicy& policy) {
    std::vector<ClockEstimate> out(bounds.size());
    for (std::size_t h = 0; h < bounds.size(); ++h) {
        ClockBounds b = bounds[h];
        if (h < prior.size()) b.merge(prior[h]);
        out[h] = estimate_clock(b, names.name(static_cast<uint32_t>(h)), policy);
    }
    return out;
}

std::vector<int64_t> offsets_of(const std::vector<ClockEstimate>& clocks) {
    std::vector<int64_t> theta(clocks.size());
    for (std::size_t h = 0; h < clocks.size(); ++h) theta[h] = clocks[h].offset;
    return theta;
}

}  // namespace

JoinResult join_batch(HostModel& model, WireMsgs& msgs, const HostNames& names,
                      const ClockPolicy& policy, const JoinHistory* history) {
    static const std::vector<ClockBounds> kNoBounds;
    const std::vector<ClockBounds>& prior = history ? history->bounds : kNoBounds;
    JoinResult result;
    result.counts.duplicate_msgs = dedupe(msgs);
    tbb::parallel_for(std::size_t{0}, model.qps.size(),
                      [&](std::size_t q) { complete_work_requests(model.qps[q]); });
    for (const Incarnation& q : model.qps) result.counts.qps_without_ip += !q.has_ip;
    const QpIndex index(model);
    const std::size_t hosts = names.size();

    // Pass 1 with the offsets of the command line (else those of earlier windows, else 0);
    // pass 2, where a message had several candidate incarnations, with the offsets pass 1
    // estimated.
    std::vector<int64_t> theta =
        offsets_of(estimate_all(std::vector<ClockBounds>(hosts), prior, names, policy));
    Assignment assignment = assign_requesters(msgs, model, index, theta);
    RequesterJoin joined = join_requesters(model, msgs, assignment.requester, hosts, history);
    result.clocks = estimate_all(joined.bounds, prior, names, policy);
    if (assignment.ambiguous) {
        theta = offsets_of(result.clocks);
        assignment = assign_requesters(msgs, model, index, theta);
        joined = join_requesters(model, msgs, assignment.requester, hosts, history);
        result.clocks = estimate_all(joined.bounds, prior, names, policy);
    }
    theta = offsets_of(result.clocks);
    result.counts.src_untraced = assignment.src_untraced;
    result.counts.src_host_untraced = assignment.src_host_untraced;
    result.counts.pair_conflicts = assignment.pair_conflicts;
    result.requester = std::move(assignment.requester);
    result.source = std::move(assignment.source);
    result.wire = std::move(joined.wire);
    result.position = std::move(joined.position);
    result.unmatched_wr = joined.unmatched_wr;
    for (std::size_t q = 0; q < model.qps.size(); ++q) {
        result.counts.unmatched_wr += joined.unmatched_wr[q];
        result.counts.wire_only += joined.wire_only[q];
        for (const E2eMatch& e : joined.matches[q]) result.matches.push_back(e);
    }
    order_matches(result.matches, msgs, model);

    // Responders, with the final offsets, and their receive completions.
    result.responder.assign(msgs.size(), -1);
    tbb::parallel_for(std::size_t{0}, msgs.size(), [&](std::size_t i) {
        const WireMsg& m = msgs[i];
        const auto& candidates = index.at_endpoint(m.dst_ip, m.dst_qpn);
        if (candidates.empty()) return;
        const uint32_t h = model.qps[candidates.front()].host;
        result.responder[i] = index.pick(candidates, m.t_first + theta[h]);
    });
    result.t_recv_poll.assign(msgs.size(), kNone);
    result.recv_event.assign(msgs.size(), -1);
    std::vector<std::vector<uint32_t>> per_responder = group_by(result.responder, model.qps.size());
    std::atomic<uint64_t> recv_matched{0};
    tbb::parallel_for(std::size_t{0}, model.qps.size(), [&](std::size_t q) {
        const Incarnation& inc = model.qps[q];
        std::vector<uint32_t>& list = per_responder[q];
        std::erase_if(list, [&](uint32_t i) {
            return !(msgs[i].op == Op::send || (msgs[i].op == Op::write && msgs[i].imm != kNone));
        });
        if (list.empty() || inc.recv_completions.empty()) return;
        order_by_psn(list, msgs, inc.has_rq_psn, inc.rq_psn);
        std::vector<const WireMsg*> sends;
        sends.reserve(list.size());
        for (uint32_t i : list) sends.push_back(&msgs[i]);
        const std::vector<int64_t> polls = match_receive_completions(inc, sends);
        uint64_t matched = 0;
        for (std::size_t k = 0; k < list.size(); ++k) {
            if (polls[k] < 0) continue;
            const Completion& c = inc.recv_completions[static_cast<std::size_t>(polls[k])];
            result.t_recv_poll[list[k]] = c.wall;
            result.recv_event[list[k]] = c.event;
            ++matched;
        }
        recv_matched.fetch_add(matched, std::memory_order_relaxed);
    });
    result.counts.recv_matched = recv_matched.load();
    return result;
}

}  // namespace insert::correlate
