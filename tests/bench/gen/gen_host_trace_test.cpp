// The host-trace model (bench/gen/host_trace.*, host_layout.*): truthful to the simulation -
// posts before their packets, one poll per signaled work request after its completion,
// every WRITE/READ/atomic inside a registered MR with the right it needs, QPN lives that do
// not overlap, losses reported - and deterministic to the byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "bench/gen/alert_truth.hpp"
#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/congestion_truth.hpp"
#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/e2e_truth_json.hpp"
#include "bench/gen/generator.hpp"
#include "bench/gen/host_trace.hpp"
#include "bench/gen/host_trace_json.hpp"
#include "bench/gen/scenario_json.hpp"

namespace insert::gen {
namespace {

Scenario host_traces_file() {
    std::string error;
    auto s = load_scenario_file(INSERT_SOURCE_ROOT "/bench/gen/scenarios/host_traces.json", error);
    EXPECT_TRUE(s) << error;
    return s ? *s : Scenario{};
}

std::vector<std::pair<std::string, Scenario>> scenarios() {
    std::vector<std::pair<std::string, Scenario>> all;
    ScaleOptions opts;
    opts.scale = 0.5;
    opts.qps = 400;
    opts.packets = 4000;
    for (const std::string& name : builtin_names())
        all.emplace_back(name, *builtin_scenario(name, opts));
    all.emplace_back("host_traces.json", host_traces_file());
    return all;
}

struct Traced {
    std::unique_ptr<Generation> gen;
    std::unique_ptr<HostTrace> trace;
};

Traced run(const Scenario& s, uint64_t seed, bool threaded = false) {
    Traced r;
    r.gen = std::make_unique<Generation>(s, seed);
    r.gen->set_threaded(threaded);
    r.gen->record_host_events();
    std::string error;
    EXPECT_TRUE(r.gen->run("", error)) << error;
    r.trace = std::make_unique<HostTrace>(r.gen->scenario(), r.gen->sim(), seed);
    return r;
}

// A work request is posted before the NIC takes it, hence before any packet of its message
// is observed; a completion is polled after the NIC completed the work request, a receive
// completion after the responder accepted the message.
TEST(GenHostTrace, verbs_happen_in_the_order_the_simulation_allows) {
    uint64_t posts = 0;
    for (const auto& [name, sc] : scenarios()) {
        const Traced r = run(sc, 3);
        const auto& ev = r.gen->sim().host_events();
        std::map<uint32_t, uint64_t> first_seen;  // message uid -> t_first_ns
        for (const TruthMsg& m : r.gen->msgs()) first_seen[m.msg_uid] = m.t_first_ns;
        for (const HostRecord& h : r.trace->records()) {
            const int64_t at = r.trace->true_ns(h);
            if (h.kind == HostRec::post_send) {
                ++posts;
                EXPECT_LT(at, static_cast<int64_t>(ev[h.ref].post_ns)) << name;
                if (first_seen.contains(h.ref)) {
                    EXPECT_LT(at + static_cast<int64_t>(kEpochNs),
                              static_cast<int64_t>(first_seen[h.ref]))
                        << name << " message " << h.ref;
                }
            } else if (h.kind == HostRec::poll_send) {
                EXPECT_GT(at, static_cast<int64_t>(ev[h.ref].done_ns)) << name;
            } else if (h.kind == HostRec::poll_recv) {
                EXPECT_GT(at, static_cast<int64_t>(ev[h.ref].delivered_ns)) << name;
            } else if (h.kind == HostRec::post_recv && ev[h.ref].delivered_ns != kNoTime) {
                EXPECT_LT(at, static_cast<int64_t>(ev[h.ref].delivered_ns)) << name;
            }
        }
    }
    EXPECT_GT(posts, 3000u);
}

// Without losses: every posted work request has exactly one post_send; a signaled one whose
// NIC completed it exactly one poll_cq with its status, an unsignaled one none.
TEST(GenHostTrace, every_signaled_work_request_has_exactly_one_poll) {
    Scenario s = host_traces_file();
    s.host_trace.loss = 0;
    s.host_trace.lost_records.clear();
    s.host_trace.datapath_off.clear();
    s.host_trace.untraced_hosts.clear();
    const Traced r = run(s, 2);
    std::map<uint32_t, int> posts, polls;
    std::map<uint32_t, bool> signaled;
    for (const HostRecord& h : r.trace->records()) {
        if (h.kind == HostRec::post_send) {
            ++posts[h.ref];
            signaled[h.ref] = (h.flags & kSignaled) != 0;
        }
        if (h.kind == HostRec::poll_send) {
            ++polls[h.ref];
            EXPECT_EQ(r.trace->completion(h).status, r.gen->sim().host_events()[h.ref].status);
        }
    }
    const auto& msgs = r.gen->sim().messages();
    uint64_t unsignaled = 0, errors = 0;
    for (uint32_t uid = 0; uid < msgs.size(); ++uid) {
        const MsgHostEvents& ev = r.gen->sim().host_events()[uid];
        EXPECT_EQ(posts[uid], 1) << uid;
        const bool want_poll = signaled[uid] && ev.done_ns != kNoTime;
        EXPECT_EQ(polls[uid], want_poll ? 1 : 0) << uid;
        unsignaled += !signaled[uid];
        errors += ev.status == WcStatus::rem_access_err || ev.status == WcStatus::wr_flush_err;
    }
    EXPECT_GT(unsignaled, 100u);  // every third is signaled (and each QP's last)
    EXPECT_GT(errors, 1u);        // the access error and the work it flushed
}

// Every WRITE, READ and atomic lands inside an MR of the responder's process that has the
// remote right it needs; the scenario's access_error target uses an rkey no MR has. The
// attacks scenario's rkey attacks (connections of their own, after the others) all miss - an
// unknown or stale rkey, past the MR's end, or without the right - and its injected packets
// are no verbs work at all.
TEST(GenHostTrace, rdma_targets_lie_inside_registered_memory) {
    uint64_t checked = 0, scripted = 0, attacks = 0;
    for (const auto& [name, sc] : scenarios()) {
        Generation gen(sc, 5);
        const HostLayout& layout = gen.sim().layout();
        std::set<uint32_t> injected;
        for (const Injection& in : gen.sim().injections()) injected.insert(in.uid);
        // The rkey attacks' connections come after every scenario connection, one each.
        const auto verbs_attacks = std::count_if(sc.attacks.begin(), sc.attacks.end(), [](auto& a) {
            return a.kind <= AttackKind::access_denied;
        });
        const std::size_t first_attack_conn = gen.sim().conns().size() - verbs_attacks;
        const auto& msgs = gen.sim().messages();
        for (uint32_t uid = 0; uid < msgs.size(); ++uid) {
            const MsgInfo& m = msgs[uid];
            if (m.op == OpType::send || injected.count(uid)) continue;
            const uint32_t need = access_needed(m.op);
            bool inside = false, known = false;
            for (const HostMr& mr : layout.mrs_of(layout.process_of(m.conn, 1))) {
                known |= mr.rkey == m.rkey;
                inside |= mr.rkey == m.rkey && m.va >= mr.addr &&
                          m.va + m.len <= mr.addr + mr.length && (mr.access & need) == need;
            }
            if (m.conn >= first_attack_conn) {
                EXPECT_TRUE(m.access_error) << name << " attack message " << uid;
                EXPECT_FALSE(inside) << name << " attack message " << uid;
                ++attacks;
                continue;
            }
            if (m.access_error) {
                EXPECT_FALSE(known) << name;
                ++scripted;
                continue;
            }
            EXPECT_TRUE(inside) << name << " message " << m.index << " of connection " << m.conn;
            EXPECT_EQ(m.va % 8, 0u) << name;
            ++checked;
        }
    }
    EXPECT_GT(checked, 2000u);
    EXPECT_EQ(scripted, 2u);  // losses and host_traces.json have one each
    EXPECT_GT(attacks, 3u);   // at least one WRITE per rkey attack kind
}

// QPN reuse: the lives of one (host, QPN) never overlap (the earlier QP is destroyed before
// the next is created), and each has a peer host of its own.
TEST(GenHostTrace, reused_qpns_have_disjoint_lives) {
    uint64_t reused = 0;
    for (uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
        const Traced r = run(host_traces_file(), seed);
        EXPECT_EQ(r.trace->reuse_overlaps(), 0u);
        std::map<std::pair<uint16_t, uint32_t>, std::vector<const HostQp*>> lives;
        for (std::size_t i = 0; i < r.trace->qp_count(); ++i) {
            const HostQp& q = r.trace->qp(static_cast<uint32_t>(i));
            if (!q.exists) continue;
            const uint16_t host = q.side == 0 ? r.gen->sim().conns()[q.conn].spec.a
                                              : r.gen->sim().conns()[q.conn].spec.b;
            lives[{host, q.qpn}].push_back(&q);
        }
        for (auto& [key, v] : lives) {
            if (v.size() < 2) continue;
            ++reused;
            std::sort(v.begin(), v.end(),
                      [](const HostQp* a, const HostQp* b) { return a->create_ns < b->create_ns; });
            std::set<uint16_t> peers;
            for (std::size_t k = 0; k < v.size(); ++k) {
                EXPECT_TRUE(peers.insert(v[k]->peer_host).second) << "seed " << seed;
                if (k + 1 < v.size()) {
                    EXPECT_LT(v[k]->end_ns, v[k + 1]->create_ns) << "seed " << seed;
                    EXPECT_TRUE(v[k]->destroyed) << "seed " << seed;
                }
            }
        }
    }
    EXPECT_GT(reused, 8u);
}

// What the trace records as a whole: a process's records have distinct times in record
// order (canonical order); every record's t_ns is its wall_ns minus its host's offset;
// untraced hosts have no record, control-path-only hosts no data-path record; the `lost`
// records count exactly the data-path records missing; pids are distinct within a host,
// and processes own several QPs.
TEST(GenHostTrace, records_are_what_the_tracer_would_report) {
    const Scenario sc = host_traces_file();
    const Traced r = run(sc, 4);
    const HostTrace& tr = *r.trace;
    std::map<uint32_t, int64_t> last;
    std::map<uint16_t, uint64_t> reported;
    std::map<uint32_t, uint32_t> qps_per_process;
    for (const HostRecord& h : tr.records()) {
        EXPECT_FALSE(h.host == 5) << "host 5 is untraced";
        const bool datapath = h.kind == HostRec::post_send || h.kind == HostRec::post_recv ||
                              h.kind == HostRec::poll_send || h.kind == HostRec::poll_recv;
        EXPECT_FALSE(datapath && h.host == 4) << "host 4 traces the control path only";
        if (h.kind == HostRec::lost) reported[h.host] += h.ref;
        if (h.kind == HostRec::create_qp) ++qps_per_process[h.proc];
        if (h.proc == kNoProcess) continue;
        if (last.contains(h.proc)) {
            EXPECT_GT(h.wall_ns, last[h.proc]);
        }
        last[h.proc] = h.wall_ns;
    }
    uint64_t total = 0;
    for (const auto& [host, n] : reported) total += n;
    EXPECT_GT(total, 10u);
    EXPECT_EQ(total, tr.records_lost());
    // Without the losses, exactly that many more data-path records.
    Scenario lossless = sc;
    lossless.host_trace.loss = 0;
    lossless.host_trace.lost_records.clear();
    const Traced full = run(lossless, 4);
    auto datapath_records = [](const HostTrace& t) {
        uint64_t n = 0;
        for (const HostRecord& h : t.records())
            n += h.kind == HostRec::post_send || h.kind == HostRec::post_recv ||
                 h.kind == HostRec::poll_send || h.kind == HostRec::poll_recv;
        return n;
    };
    EXPECT_EQ(datapath_records(*full.trace), datapath_records(tr) + total);
    for (const auto& [proc, n] : qps_per_process) EXPECT_GE(n, 2u) << "process " << proc;
    const auto& procs = tr.layout().processes();
    for (std::size_t i = 0; i < procs.size(); ++i)
        for (std::size_t j = i + 1; j < procs.size(); ++j) {
            if (procs[i].host == procs[j].host) {
                EXPECT_NE(procs[i].pid, procs[j].pid);
            }
        }
}

// A process's QPs have distinct `qp` objects while they live (the correlator tells QPs
// apart by (host, pid, qp)), also when it owns thousands of them.
TEST(GenHostTrace, live_qps_of_a_process_have_distinct_objects) {
    ScaleOptions opts;
    opts.qps = 20000;
    opts.packets = 20000;
    Scenario sc = *builtin_scenario("large", opts);
    sc.host_trace.processes_per_host = 1;  // 625 QPs per process
    const Traced r = run(sc, 1);
    std::set<std::tuple<uint16_t, uint32_t, uint64_t>> alive;
    std::map<uint32_t, uint32_t> per_process;
    for (const HostRecord& h : r.trace->records()) {
        if (h.kind != HostRec::create_qp && h.kind != HostRec::destroy_qp) continue;
        const auto key = std::make_tuple(h.host, r.trace->pid(h.proc), r.trace->qp(h.ref).ptr);
        if (h.kind == HostRec::create_qp) {
            EXPECT_TRUE(alive.insert(key).second) << "two live QPs share an object";
            ++per_process[h.proc];
        } else {
            alive.erase(key);
        }
    }
    EXPECT_GT(per_process.begin()->second, 1000u);
}

std::string host_bytes(const Traced& r) {
    HugeVector<char> mem;
    {
        JsonOut out(mem);
        write_host_records(r.gen->scenario(), r.gen->sim(), *r.trace, out);
        out.flush();
    }
    return {mem.begin(), mem.end()};
}

std::string e2e_bytes(const Traced& r) {
    const E2eTruth e2e(r.gen->scenario(), *r.trace, r.gen->msgs(), r.gen->truth());
    const AlertTruth alerts(r.gen->scenario(), *r.trace, e2e);
    const CongestionTruth congestion(r.gen->scenario(), e2e, r.gen->truth());
    HugeVector<char> mem;
    {
        JsonOut out(mem);
        write_e2e_records(r.gen->scenario(), *r.trace, {e2e, &alerts, &congestion}, out);
        out.flush();
    }
    return {mem.begin(), mem.end()};
}

// Same scenario and seed: the same host-trace and e2e-truth bytes on one thread or three;
// another seed: other bytes.
TEST(GenHostTrace, traces_and_e2e_truth_are_deterministic) {
    for (const auto& [name, sc] : scenarios()) {
        if (name != "mixed_ops" && name != "losses" && name != "host_traces.json") continue;
        const Traced one = run(sc, 9, false), three = run(sc, 9, true), other = run(sc, 10, true);
        const std::string h1 = host_bytes(one), e1 = e2e_bytes(one);
        EXPECT_GT(h1.size(), 10000u);
        EXPECT_TRUE(h1 == host_bytes(three)) << name << ": host traces differ";
        EXPECT_TRUE(e1 == e2e_bytes(three)) << name << ": e2e truth differs";
        EXPECT_FALSE(h1 == host_bytes(other)) << name;
        EXPECT_FALSE(e1 == e2e_bytes(other)) << name;
    }
}

// Asking for host traces changes nothing of the pcap or the truth.
TEST(GenHostTrace, host_events_leave_the_capture_unchanged) {
    const Scenario sc = host_traces_file();
    auto frames = [&](bool host) {
        Generation gen(sc, 6);
        if (host) gen.record_host_events();
        std::string bytes, error;
        EXPECT_TRUE(gen.run("", error, [&](const SimPacket&, std::span<const uint8_t> f) {
            bytes.append(reinterpret_cast<const char*>(f.data()), f.size());
        }));
        return bytes;
    };
    const std::string with = frames(true), without = frames(false);
    EXPECT_GT(with.size(), 100000u);
    EXPECT_TRUE(with == without);
}

}  // namespace
}  // namespace insert::gen
