// The e2e truth (bench/gen/e2e_truth.*): hand-derived exact records for tiny scenarios, and
// the properties that must hold on every scenario - the rules pair each work request with
// the message it made whenever the two can be told apart, every host's true clock offset
// lies inside the bounds the rules derive, and the summary adds up.
//
// Hand-checked set-up (gen_reliability_test's timing): hosts A = 10.0.0.1 (QP 256, the
// requester) and B = 10.0.0.2 (QP 512), one RC connection, MTU 1024, first PSN 100, link
// 8 Gb/s (a frame of L bytes takes L + 20 ns), 100 ns to the observer and 100 ns on to the
// receiver, ACKs coalesced for 1000 ns. A WRITE Only of L bytes is a frame of 74 + L bytes,
// an ACK 62 B (82 ns). Three WRITEs of 1000, 800 and 600 B, posted (the NIC takes them) at
// P = 1000, 21000, 41000, each alone on the wire:
//   1000 B: serialized 1094 ns, observed P+1194, at B P+1294, ACK leaves P+2294, observed
//           P+2476, at A P+2576.                 -> t_first 2194, t_ack 3476, done 3576
//    800 B: 894 ns: observed P+994, ACK observed P+2276, at A P+2376
//                                                -> t_first 21994, t_ack 23276, done 23376
//    600 B: 694 ns: observed P+794, ACK observed P+2076, at A P+2176
//                                                -> t_first 41794, t_ack 43076, done 43176
// Host model without jitter: a post_send 1000 ns before the NIC takes the work request
// (true times 0, 20000, 40000), its poll_cq 2000 ns after the NIC completed it (5576,
// 25376, 45176). A host's wall_ns is kEpochNs + true time + its offset. All times below are
// offsets from kEpochNs.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/generator.hpp"
#include "bench/gen/host_trace.hpp"
#include "bench/gen/scenario_json.hpp"

namespace insert::gen {
namespace {

int64_t t(int64_t offset) {
    return static_cast<int64_t>(kEpochNs) + offset;
}

Scenario three_writes() {
    Scenario s;
    s.name = "three_writes";
    s.rate_gbps = 8;
    s.prop_pre_ns = 100;
    s.prop_post_ns = 100;
    s.timing.ack_delay_ns = 1000;
    s.hosts = {{*proto::IpAddress::parse("10.0.0.1"), {}},
               {*proto::IpAddress::parse("10.0.0.2"), {}}};
    ConnSpec c;
    c.qpn_a = 256;
    c.qpn_b = 512;
    c.psn_a = 100;
    c.psn_b = 5000;
    s.conns = {c};
    s.messages = {{0, OpType::write, 1000, 1000, false, false},
                  {0, OpType::write, 800, 21000, false, false},
                  {0, OpType::write, 600, 41000, false, false}};
    HostTraceSpec& h = s.host_trace;
    h.post_to_tx_ns = 1000;
    h.post_to_tx_jitter_ns = 0;
    h.poll_delay_ns = 2000;
    h.poll_jitter_ns = 0;
    h.setup_lead_ns = 20'000;
    h.processes_per_host = 1;
    h.mrs_per_process = 1;
    h.exit_without_destroy = 0;
    return s;
}

// A run with host events, its host traces and its e2e truth.
struct Traced {
    std::unique_ptr<Generation> gen;
    std::unique_ptr<HostTrace> trace;
    std::unique_ptr<E2eTruth> e2e;
};

Traced run(const Scenario& s, uint64_t seed = 1) {
    EXPECT_EQ(validate(s), "");
    Traced r;
    r.gen = std::make_unique<Generation>(s, seed);
    r.gen->record_host_events();
    std::string error;
    EXPECT_TRUE(r.gen->run("", error)) << error;
    r.trace = std::make_unique<HostTrace>(r.gen->scenario(), r.gen->sim(), seed);
    r.e2e = std::make_unique<E2eTruth>(r.gen->scenario(), *r.trace, r.gen->msgs(), r.gen->truth());
    return r;
}

// The fields every hand-checked e2e record is checked for.
void expect_e2e(const E2eRecord& e, uint32_t psn_first, uint32_t bytes, bool resync, int64_t t_post,
                uint64_t t_first, uint64_t t_ack, int64_t t_poll, int64_t host_ns, int64_t net_ns,
                int64_t completion_ns, int64_t total_ns, bool signaled) {
    EXPECT_EQ(e.msg->psn_first, psn_first);
    EXPECT_EQ(e.bytes, bytes);
    EXPECT_EQ(e.resync, resync);
    EXPECT_EQ(e.t_post_ns, t(t_post));
    EXPECT_EQ(e.msg->t_first_ns, static_cast<uint64_t>(t(t_first)));
    EXPECT_EQ(e.msg->t_ack_ns, std::optional<uint64_t>(t(t_ack)));
    EXPECT_EQ(e.t_poll_ns, std::optional<int64_t>(t(t_poll)));
    EXPECT_EQ(e.host_ns(), std::optional<int64_t>(host_ns));
    EXPECT_EQ(e.net_ns(), std::optional<int64_t>(net_ns));
    EXPECT_EQ(e.completion_ns(), std::optional<int64_t>(completion_ns));
    EXPECT_EQ(e.total_ns(), std::optional<int64_t>(total_ns));
    EXPECT_EQ(e.signaled, signaled);
    EXPECT_EQ(e.wc_status, std::optional<WcStatus>(WcStatus::success));
    EXPECT_FALSE(e.t_recv_poll_ns);  // WRITEs without immediate consume no receive
}

// Host A's clock runs 5000 ns ahead of the observer, B's 7000 behind. The post_send of the
// second WRITE is lost: W = [w0 (1000 B), w2 (600 B)], M = [m0, m1, m2] (PSN order).
//   (w0, m0) agree: exact. (w2, m1): 600 != 800; the search finds (a, b) = (0, 1) first:
//   (w2, m2) agree -> m1 wire-only, (w2, m2) `resync`.
// Clock of A over the two matches (wall times: posts 5000 and 45000, polls 10576, 50176):
//   lo = max(5000 - 2194, 45000 - 41794) = max(2806, 3206) = 3206
//   hi = min(10576 - 3476, 50176 - 43076) = 7100
//   theta = 3206 + floor((7100 - 3206) / 2) = 3206 + 1947 = 5153   (true: 5000, inside)
// B has no requester, so no bound: offset 0, source none.
// e0: t_post_ns = 5000 - 5153 = -153, host_ns = 2194 + 153 = 2347, net_ns = 3476 - 2194 =
//     1282, t_poll_ns = 10576 - 5153 = 5423, completion_ns = 5423 - 3476 = 1947,
//     total_ns = 10576 - 5000 = 5576 (= 2347 + 1282 + 1947).
// e2: t_post_ns = 45000 - 5153 = 39847, host_ns = 41794 - 39847 = 1947, net_ns = 1282,
//     t_poll_ns = 50176 - 5153 = 45023, completion_ns = 45023 - 43076 = 1947,
//     total_ns = 50176 - 45000 = 5176.
TEST(GenE2eTruth, lost_post_send_is_resynchronised) {
    Scenario s = three_writes();
    s.host_trace.clock_offsets_ns = {5000, -7000};
    s.host_trace.lost_records = {{0, 1, TraceVerb::post_send}};
    const Traced r = run(s);
    ASSERT_EQ(r.e2e->e2e().size(), 2u);
    expect_e2e(r.e2e->e2e()[0], 100, 1000, false, -153, 2194, 3476, 5423, 2347, 1282, 1947, 5576,
               true);
    expect_e2e(r.e2e->e2e()[1], 102, 600, true, 39847, 41794, 43076, 45023, 1947, 1282, 1947, 5176,
               true);
    const E2eSummary& sum = r.e2e->summary();
    EXPECT_EQ(sum.e2e, 2u);
    EXPECT_EQ(sum.exact, 1u);
    EXPECT_EQ(sum.resync, 1u);
    EXPECT_EQ(sum.unmatched_wr, 0u);
    EXPECT_EQ(sum.wire_only, 1u);
    EXPECT_EQ(sum.src_untraced, 0u);
    EXPECT_EQ(sum.pair_conflicts, 0u);
    EXPECT_EQ(sum.src_host_untraced, 0u);
    EXPECT_EQ(sum.recv_matched, 0u);  // WRITEs without immediate
    EXPECT_EQ(sum.hosts, 2u);
    EXPECT_EQ(sum.qps, 2u);
    EXPECT_EQ(sum.apps, 1u);
    EXPECT_EQ(sum.pairs, 0u);
    EXPECT_EQ(sum.trace_drops, 1u);
    ASSERT_EQ(r.e2e->clocks().size(), 2u);
    const ClockRecord& a = r.e2e->clocks()[0];
    EXPECT_EQ(a.lo, std::optional<int64_t>(3206));
    EXPECT_EQ(a.hi, std::optional<int64_t>(7100));
    EXPECT_EQ(a.offset, 5153);
    EXPECT_STREQ(a.source, "midpoint");
    EXPECT_TRUE(a.consistent);
    EXPECT_EQ(a.matches, 2u);
    const ClockRecord& b = r.e2e->clocks()[1];
    EXPECT_FALSE(b.lo);
    EXPECT_FALSE(b.hi);
    EXPECT_EQ(b.offset, 0);
    EXPECT_STREQ(b.source, "none");
    // The app: host_ns {2347, 1947} -> p50 1947 (rank ceil(0.5 * 2) = 1), p99 = max 2347;
    // total_ns {5576, 5176} -> p50 5176, p99 5576.
    ASSERT_EQ(r.e2e->apps().size(), 1u);
    const AppRecord& app = r.e2e->apps()[0];
    EXPECT_EQ(app.qps, 1u);
    EXPECT_EQ(app.msgs[1], 2u);
    EXPECT_EQ(app.bytes[1], 1600u);
    EXPECT_EQ(app.host_ns.p50, std::optional<int64_t>(1947));
    EXPECT_EQ(app.host_ns.p99, std::optional<int64_t>(2347));
    EXPECT_EQ(app.host_ns.max, std::optional<int64_t>(2347));
    EXPECT_EQ(app.net_ns.p50, std::optional<int64_t>(1282));
    EXPECT_EQ(app.total_ns.p50, std::optional<int64_t>(5176));
    EXPECT_EQ(app.total_ns.p99, std::optional<int64_t>(5576));
    EXPECT_EQ(app.unmatched_wr, 0u);
    EXPECT_TRUE(r.e2e->pairs().empty());  // the dataplane paired A and B right (sport)
    // The trace says so: one data-path record lost, reported in a `lost` record.
    EXPECT_EQ(r.trace->records_lost(), 1u);
    uint64_t reported = 0;
    for (const HostRecord& h : r.trace->records())
        if (h.kind == HostRec::lost) reported += h.ref;
    EXPECT_EQ(reported, 1u);
    EXPECT_EQ(r.e2e->mispaired(), 0u);
}

// Every second work request signaled (and the last): w0 is unsignaled. SPEC 10 v1.3: it
// has no poll, completion or total latency; w1's poll (true 25376) only covers it, and
// bounds no clock. Offsets 0 for A. All three match exactly.
//   lo = max(0 - 2194, 20000 - 21994, 40000 - 41794) = -1794
//   hi = min(25376 - 23276, 45176 - 43076) = 2100   (not w0's 25376 - 3476)
//   theta = -1794 + floor(3894 / 2) = 153
// e0: t_post_ns = -153, host_ns = 2347, net_ns 1282, t_poll_ns null, t_covered_ns =
//     25376 - 153 = 25223, completion_ns and total_ns null, wc_status null.
// e1: t_post_ns = 19847, host_ns = 21994 - 19847 = 2147, net_ns = 1282,
//     t_poll_ns = 25223, completion_ns = 25223 - 23276 = 1947, total_ns = 5376.
// The app: completion and total percentiles over w1 and w2 only (signaled_wrs 2).
TEST(GenE2eTruth, unsignaled_request_has_no_completion_of_its_own) {
    Scenario s = three_writes();
    s.host_trace.clock_offsets_ns = {0, -7000};
    s.host_trace.unsignaled_every = 2;
    const Traced r = run(s);
    ASSERT_EQ(r.e2e->e2e().size(), 3u);
    const E2eRecord& e0 = r.e2e->e2e()[0];
    EXPECT_EQ(e0.signaled, false);
    EXPECT_EQ(e0.t_post_ns, t(-153));
    EXPECT_EQ(e0.host_ns(), std::optional<int64_t>(2347));
    EXPECT_EQ(e0.net_ns(), std::optional<int64_t>(1282));
    EXPECT_FALSE(e0.t_poll_ns);
    EXPECT_FALSE(e0.completion_ns());
    EXPECT_FALSE(e0.total_ns());
    EXPECT_FALSE(e0.wc_status);
    EXPECT_EQ(e0.t_covered_ns, std::optional<int64_t>(t(25223)));
    expect_e2e(r.e2e->e2e()[1], 101, 800, false, 19847, 21994, 23276, 25223, 2147, 1282, 1947, 5376,
               true);
    EXPECT_FALSE(r.e2e->e2e()[1].t_covered_ns);
    ASSERT_EQ(r.e2e->apps().size(), 1u);
    EXPECT_EQ(r.e2e->apps()[0].signaled_wrs, 2u);
    EXPECT_EQ(r.e2e->apps()[0].total_ns.max, std::optional<int64_t>(5376));
    const ClockRecord& a = r.e2e->clocks()[0];
    EXPECT_EQ(a.lo, std::optional<int64_t>(-1794));
    EXPECT_EQ(a.hi, std::optional<int64_t>(2100));
    EXPECT_EQ(a.offset, 153);
    EXPECT_EQ(r.e2e->summary().exact, 3u);
    EXPECT_EQ(r.e2e->summary().wire_only, 0u);
}

// A host without a tracer: its messages have no requester and no e2e record, and no host
// record uses their source address (src_host_untraced, not src_untraced); no clock record
// for it, one for the responder's host (it has a QP).
TEST(GenE2eTruth, untraced_requester_host_counts_src_untraced) {
    Scenario s = three_writes();
    s.host_trace.untraced_hosts = {0};
    const Traced r = run(s);
    EXPECT_TRUE(r.e2e->e2e().empty());
    EXPECT_EQ(r.e2e->summary().src_host_untraced, 3u);
    EXPECT_EQ(r.e2e->summary().src_untraced, 0u);
    EXPECT_EQ(r.e2e->summary().hosts, 1u);
    EXPECT_EQ(r.e2e->summary().qps, 1u);
    ASSERT_EQ(r.e2e->clocks().size(), 1u);
    EXPECT_EQ(r.e2e->clocks()[0].host, 1);
}

// --datapath off on the requester's host: its QP is known (control path), its messages all
// wire-only.
TEST(GenE2eTruth, control_path_only_host_leaves_messages_wire_only) {
    Scenario s = three_writes();
    s.host_trace.datapath_off = {0};
    const Traced r = run(s);
    EXPECT_TRUE(r.e2e->e2e().empty());
    EXPECT_EQ(r.e2e->summary().wire_only, 3u);
    EXPECT_EQ(r.e2e->summary().src_untraced, 0u);
    EXPECT_EQ(r.e2e->summary().unmatched_wr, 0u);
}

std::vector<std::pair<std::string, Scenario>> every_scenario() {
    std::vector<std::pair<std::string, Scenario>> all;
    ScaleOptions opts;
    opts.scale = 0.5;
    opts.qps = 400;
    opts.packets = 4000;
    for (const std::string& name : builtin_names())
        all.emplace_back(name, *builtin_scenario(name, opts));
    std::string error;
    const auto file =
        load_scenario_file(INSERT_SOURCE_ROOT "/bench/gen/scenarios/host_traces.json", error);
    EXPECT_TRUE(file) << error;
    if (file) all.emplace_back("host_traces.json", *file);
    return all;
}

// On every scenario, seeds not chosen: the rules pair each work request with the message
// it made unless the two are indistinguishable; each host's true offset lies inside
// [lo, hi]; a bounded host's offset estimate is within its bounds; the counts add up.
TEST(GenE2eTruth, rules_are_right_and_bounds_hold_on_every_scenario) {
    uint64_t checked = 0, bounded = 0, resynced = 0;
    for (const auto& [name, sc] : every_scenario()) {
        for (uint64_t seed : {1, 2}) {
            const Traced r = run(sc, seed);
            const E2eTruth& e = *r.e2e;
            EXPECT_EQ(e.mispaired(), 0u) << name << " seed " << seed;
            for (const ClockRecord& c : e.clocks()) {
                const int64_t truth = r.trace->hosts()[c.host].theta_ns;
                EXPECT_LE(c.lo.value_or(truth), truth)
                    << name << " seed " << seed << " h" << c.host;
                EXPECT_GE(c.hi.value_or(truth), truth)
                    << name << " seed " << seed << " h" << c.host;
                EXPECT_TRUE(c.consistent) << name << " seed " << seed;
                bounded += c.lo && c.hi;
            }
            const E2eSummary& s = e.summary();
            // Every (deduplicated) message: matched, wire-only or without requester.
            EXPECT_EQ(s.e2e + s.wire_only + s.src_untraced + s.src_host_untraced,
                      r.gen->msgs().size() - s.duplicate_msgs)
                << name;
            EXPECT_EQ(s.e2e, s.exact + s.resync) << name;
            uint64_t app_msgs = 0, app_unmatched = 0;
            for (const AppRecord& a : e.apps())
                for (uint64_t n : a.msgs) app_msgs += n;
            for (const AppRecord& a : e.apps()) app_unmatched += a.unmatched_wr;
            EXPECT_EQ(app_msgs, s.e2e) << name;
            EXPECT_LE(app_unmatched, s.unmatched_wr) << name;
            // Each e2e record's requester is the QP of the message's connection.
            for (const E2eRecord& x : e.e2e()) {
                const uint32_t conn = r.gen->sim().messages()[x.msg->msg_uid].conn;
                EXPECT_EQ(e.incarnations()[x.req].qp, r.trace->qp(conn * 2).ptr) << name;
                EXPECT_EQ(e.incarnations()[x.req].qpn, r.trace->qp(conn * 2).qpn) << name;
                if (x.net_ns() && x.completion_ns()) {
                    EXPECT_EQ(*x.host_ns() + *x.net_ns() + *x.completion_ns(), *x.total_ns())
                        << name;
                }
            }
            checked += s.e2e;
            resynced += s.resync;
        }
    }
    // The checks ran on real work: many matches, resynchronisations, bounded clocks.
    EXPECT_GT(checked, 5000u);
    EXPECT_GT(resynced, 10u);
    EXPECT_GT(bounded, 20u);
}

}  // namespace
}  // namespace insert::gen
