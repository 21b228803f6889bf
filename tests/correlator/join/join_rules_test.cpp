// One test per join rule of docs/correlation.md, each through the shipped run_correlate()
// on records written to files; expected values derived by hand in the comments.
#include <gtest/gtest.h>

#include "tests/correlator/correlate_harness.hpp"

namespace insert::correlate::test {
namespace {

const TraceProcess kApp{"hA", 100, "app", 7, "10.0.0.1"};
const TraceProcess kServer{"hB", 300, "server", 9, "10.0.0.2"};

// A connected requester QP 17 of kApp (qp object 0xa0) to 10.0.0.2 QP 50, sq_psn 1000.
std::vector<json> connected_qp(const TraceProcess& p = kApp, const std::string& qp = "0xa0",
                               uint32_t qpn = 17, uint32_t dest = 50, int64_t t = 100) {
    return {p.create_qp(t, qp, qpn), p.rtr(t + 10, qp, qpn, "10.0.0.2", dest),
            p.rts(t + 20, qp, qpn, 1000)};
}

TEST(Join, latency_split_and_clock_midpoint) {
    // WRITE: post 1000050, first 1000100, ack 1000900, poll 1001000.
    // SEND:  post 1002000, first 1002100, ack 1002500, poll 1002700.
    // lo = max(-50, -100) = -50; hi = min(100, 200) = 100; offset = -50 + 75 = 25.
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000050, "0xa0", 17, 1, "RDMA_WRITE", 3000, 4096, 77));
    trace.push_back(kApp.poll(1001000, 17, 1, "RDMA_WRITE"));
    trace.push_back(kApp.post_send(1002000, "0xa0", 17, 2, "SEND", 64));
    trace.push_back(kApp.poll(1002700, 17, 2, "SEND"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 3000, 1000100, 1000900, 4096, 77),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1001, 64, 1002100, 1002500)};
    const Outcome run = correlate({dp, trace});
    ASSERT_EQ(run.status, 0);
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[0]["op"], "WRITE");
    EXPECT_EQ(e2e[0]["pid"], 100);
    EXPECT_EQ(e2e[0]["comm"], "app");
    EXPECT_EQ(e2e[0]["cgroup"], 7);
    EXPECT_EQ(e2e[0]["src_qpn"], 17);
    EXPECT_EQ(e2e[0]["wr_id"], 1);
    EXPECT_EQ(e2e[0]["t_post_ns"], 1000025);
    EXPECT_EQ(e2e[0]["t_poll_ns"], 1000975);
    EXPECT_EQ(e2e[0]["host_ns"], 75);
    EXPECT_EQ(e2e[0]["net_ns"], 800);
    EXPECT_EQ(e2e[0]["completion_ns"], 75);
    EXPECT_EQ(e2e[0]["total_ns"], 950);
    EXPECT_EQ(e2e[0]["match"], "exact");
    EXPECT_EQ(e2e[1]["host_ns"], 125);
    EXPECT_EQ(e2e[1]["net_ns"], 400);
    EXPECT_EQ(e2e[1]["completion_ns"], 175);
    EXPECT_EQ(e2e[1]["total_ns"], 700);
    const auto clocks = run.of_type("clock");
    ASSERT_EQ(clocks.size(), 1u);
    EXPECT_EQ(clocks[0]["host"], "hA");
    EXPECT_EQ(clocks[0]["lo_ns"], -50);
    EXPECT_EQ(clocks[0]["hi_ns"], 100);
    EXPECT_EQ(clocks[0]["offset_ns"], 25);
    EXPECT_EQ(clocks[0]["source"], "midpoint");
    EXPECT_EQ(clocks[0]["consistent"], true);
    EXPECT_EQ(clocks[0]["matches"], 2);
    const auto apps = run.of_type("app");
    ASSERT_EQ(apps.size(), 1u);
    EXPECT_EQ(apps[0]["msgs"]["WRITE"], 1);
    EXPECT_EQ(apps[0]["msgs"]["SEND"], 1);
    EXPECT_EQ(apps[0]["bytes"]["WRITE"], 3000);
    EXPECT_EQ(apps[0]["total_ns"]["p50"], 700);  // nearest rank of {700, 950}
    EXPECT_EQ(apps[0]["total_ns"]["p99"], 950);
    EXPECT_EQ(apps[0]["total_ns"]["max"], 950);
}

TEST(Join, clock_option_outside_bounds_keeps_the_split_exact) {
    // --clock-offset hA=500: host_ns = 1000100 - (1000050 - 500) = 550; completion =
    // (1001000 - 500) - 1000900 = -400; 550 + 800 - 400 = 950 = total.
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000050, "0xa0", 17, 1, "RDMA_WRITE", 3000, 4096, 77));
    trace.push_back(kApp.poll(1001000, 17, 1, "RDMA_WRITE"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 3000, 1000100, 1000900, 4096, 77)};
    const Outcome run = correlate({dp, trace}, {"--clock-offset", "hA=500"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 1u);
    EXPECT_EQ(e2e[0]["host_ns"], 550);
    EXPECT_EQ(e2e[0]["completion_ns"], -400);
    EXPECT_EQ(e2e[0]["total_ns"], 950);
    const auto clock = run.of_type("clock").at(0);
    EXPECT_EQ(clock["source"], "option");
    EXPECT_EQ(clock["offset_ns"], 500);
    EXPECT_EQ(clock["lo_ns"], -50);
    EXPECT_EQ(clock["hi_ns"], 100);
}

TEST(Join, inconsistent_bounds_are_reported) {
    // post 1000, first 900: lo = 100; poll 2000, ack 2050: hi = -50. Midpoint by the
    // formula: 100 + floor(-150 / 2) = 25, consistent false.
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "SEND", 10));
    trace.push_back(kApp.poll(2000, 17, 1, "SEND"));
    const Outcome run =
        correlate({{wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 10, 900, 2050)}, trace});
    const auto clock = run.of_type("clock").at(0);
    EXPECT_EQ(clock["lo_ns"], 100);
    EXPECT_EQ(clock["hi_ns"], -50);
    EXPECT_EQ(clock["offset_ns"], 25);
    EXPECT_EQ(clock["consistent"], false);
    EXPECT_EQ(run.of_type("e2e").at(0)["total_ns"], 1000);
}

// Three WRITEs of 100, 200, 300 bytes; posts at 1000, 2000, 3000, first packets 100 ns
// later, ACKs 500 ns after that.
struct ThreeWrites {
    std::vector<json> trace = connected_qp();
    std::vector<json> dp;
    ThreeWrites(bool lose_post, bool lose_msg, std::vector<uint64_t> lens = {100, 200, 300}) {
        for (uint32_t k = 0; k < 3; ++k) {
            const int64_t t = 1000 * (k + 1);
            if (!(lose_post && k == 1)) {
                trace.push_back(kApp.post_send(t, "0xa0", 17, k, "RDMA_WRITE", lens[k], 8192, 5));
                trace.push_back(kApp.poll(t + 700, 17, k, "RDMA_WRITE"));
            }
            if (!(lose_msg && k == 1))
                dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000 + k, lens[k],
                                      t + 100, t + 600, 8192, 5));
        }
    }
};

TEST(Join, lost_post_send_record_resynchronises) {
    // W = [100, 300], M = [100, 200, 300]: (0,0) exact; at (1,1) 300 != 200, the nearest
    // agreeing pair skips one message (a=0, b=1): M[1] wire_only, (1,2) resync.
    const ThreeWrites s(true, false);
    const Outcome run = correlate({s.dp, s.trace});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[0]["psn_first"], 1000);
    EXPECT_EQ(e2e[0]["match"], "exact");
    EXPECT_EQ(e2e[1]["psn_first"], 1002);
    EXPECT_EQ(e2e[1]["bytes"], 300);
    EXPECT_EQ(e2e[1]["wr_id"], 2);
    EXPECT_EQ(e2e[1]["match"], "resync");
    EXPECT_EQ(run.summary()["wire_only"], 1);
    EXPECT_EQ(run.summary()["unmatched_wr"], 0);
    EXPECT_EQ(run.summary()["resync"], 1);
}

TEST(Join, unobserved_message_leaves_its_work_request_unmatched) {
    // W = [100, 200, 300], M = [100, 300]: at (1,1) the pair (2,1) agrees with one work
    // request skipped.
    const ThreeWrites s(false, true);
    const Outcome run = correlate({s.dp, s.trace});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[1]["wr_id"], 2);
    EXPECT_EQ(e2e[1]["match"], "resync");
    EXPECT_EQ(run.summary()["unmatched_wr"], 1);
    EXPECT_EQ(run.summary()["wire_only"], 0);
    EXPECT_EQ(run.of_type("app").at(0)["unmatched_wr"], 1);
}

TEST(Join, resync_prefers_skipping_work_requests_on_a_tie) {
    // W = [100, 200, 100], M = [100, 100, 200]. At (1,1): both (2,1) [skip a WR] and
    // (1,2) [skip a message] agree at distance 1; the rule takes the smaller b: W[1]
    // unmatched, (2,1) resync, then M[2] has no work request left: wire_only.
    std::vector<json> trace = connected_qp();
    const uint64_t wr_lens[] = {100, 200, 100};
    const uint64_t msg_lens[] = {100, 100, 200};
    std::vector<json> dp;
    for (uint32_t k = 0; k < 3; ++k) {
        const int64_t t = 1000 * (k + 1);
        trace.push_back(kApp.post_send(t, "0xa0", 17, k, "SEND", wr_lens[k]));
        trace.push_back(kApp.poll(t + 700, 17, k, "SEND"));
        dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000 + k, msg_lens[k],
                              t + 100, t + 600));
    }
    const Outcome run = correlate({dp, trace});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[1]["wr_id"], 2);
    EXPECT_EQ(e2e[1]["psn_first"], 1001);
    EXPECT_EQ(run.summary()["unmatched_wr"], 1);
    EXPECT_EQ(run.summary()["wire_only"], 1);
}

TEST(Join, unsignaled_work_request_has_no_completion_of_its_own) {
    // SPEC 10 v1.3. WRITE unsignaled at 1000 (first 1100, ack 1900); SEND signaled at 1500
    // (first 1600, ack 2500), polled at 3000. The application never sees the WRITE end: no
    // poll, completion or total latency; the SEND's poll covers it (t_covered_ns), which
    // bounds no clock; the app's completion and total percentiles are the SEND's alone.
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, 8192, 5, false));
    trace.push_back(kApp.post_send(1500, "0xa0", 17, 2, "SEND", 64));
    trace.push_back(kApp.poll(3000, 17, 2, "SEND"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1900, 8192, 5),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1001, 64, 1600, 2500)};
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[0]["signaled"], false);
    EXPECT_TRUE(e2e[0]["t_poll_ns"].is_null());
    EXPECT_TRUE(e2e[0]["completion_ns"].is_null());
    EXPECT_TRUE(e2e[0]["total_ns"].is_null());
    EXPECT_TRUE(e2e[0]["wc_status"].is_null());
    EXPECT_EQ(e2e[0]["t_covered_ns"], 3000);
    EXPECT_EQ(e2e[0]["host_ns"], 100);
    EXPECT_EQ(e2e[0]["net_ns"], 800);
    EXPECT_EQ(e2e[1]["signaled"], true);
    EXPECT_EQ(e2e[1]["total_ns"], 1500);
    EXPECT_TRUE(e2e[1]["t_covered_ns"].is_null());
    const auto apps = run.of_type("app");
    ASSERT_EQ(apps.size(), 1u);
    EXPECT_EQ(apps[0]["signaled_wrs"], 1);
    EXPECT_EQ(apps[0]["total_ns"]["max"], 1500);
    EXPECT_EQ(apps[0]["completion_ns"]["max"], 500);
    EXPECT_EQ(apps[0]["host_ns"]["max"], 100);
}

TEST(Join, failed_unsignaled_work_request_is_polled_at_its_own_error_completion) {
    // An unsignaled request that fails gets its own error completion (IBTA), which is then
    // its poll; the signaled one after it keeps its own.
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, 8192, 5, false));
    trace.push_back(kApp.post_send(1500, "0xa0", 17, 2, "SEND", 64));
    trace.push_back(kApp.poll(2800, 17, 1, "RDMA_WRITE", 10));  // IBV_WC_REM_ACCESS_ERR
    trace.push_back(kApp.poll(3000, 17, 2, "SEND"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1900, 8192, 5),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1001, 64, 1600, 2500)};
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[0]["t_poll_ns"], 2800);
    EXPECT_EQ(e2e[0]["total_ns"], 1800);
    EXPECT_EQ(e2e[0]["wc_status"], "REM_ACCESS_ERR");
    EXPECT_TRUE(e2e[0]["t_covered_ns"].is_null());
    EXPECT_EQ(e2e[1]["t_poll_ns"], 3000);
    EXPECT_EQ(run.of_type("app")[0]["signaled_wrs"], 1);
}

TEST(Join, repeated_wr_id_takes_completions_in_order) {
    // perftest posts every WR with the same wr_id: each takes the first untaken
    // completion at or after its post.
    std::vector<json> trace = connected_qp();
    std::vector<json> dp;
    for (uint32_t k = 0; k < 3; ++k) {
        const int64_t t = 1000 * (k + 1);
        trace.push_back(kApp.post_send(t, "0xa0", 17, 0, "SEND", 64));
        trace.push_back(kApp.poll(t + 800 + k, 17, 0, "SEND"));
        dp.push_back(
            wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000 + k, 64, t + 100, t + 500));
    }
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 3u);
    EXPECT_EQ(e2e[0]["total_ns"], 800);
    EXPECT_EQ(e2e[1]["total_ns"], 801);
    EXPECT_EQ(e2e[2]["total_ns"], 802);
}

TEST(Join, qpn_reuse_attributes_each_message_to_the_incarnation_alive) {
    // QPN 17 of 10.0.0.1: pid 100 from 100 to 10000, then pid 200 from 20000, both
    // connected to 10.0.0.2 QP 50. QP 18 of pid 100 (unambiguous) bounds the clock of hA
    // (host clock = observer + 1,000,000).
    const int64_t off = 1'000'000;
    const TraceProcess other{"hA", 200, "other", 8, "10.0.0.1"};
    std::vector<json> trace = connected_qp(kApp, "0xa0", 17, 50, off + 100);
    for (const json& r : connected_qp(kApp, "0xa8", 18, 51, off + 150)) trace.push_back(r);
    trace.push_back(kApp.post_send(off + 2000, "0xa8", 18, 9, "SEND", 10));
    trace.push_back(kApp.poll(off + 2600, 18, 9, "SEND"));
    trace.push_back(kApp.post_send(off + 5000, "0xa0", 17, 1, "SEND", 11));
    trace.push_back(kApp.poll(off + 5600, 17, 1, "SEND"));
    trace.push_back(kApp.destroy_qp(off + 10000, "0xa0", 17));
    for (const json& r : connected_qp(other, "0xb0", 17, 50, off + 20000)) trace.push_back(r);
    trace.push_back(other.post_send(off + 25000, "0xb0", 17, 1, "SEND", 11));
    trace.push_back(other.poll(off + 25600, 17, 1, "SEND"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 51, 18, "SEND", 1000, 10, 2100, 2500),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 11, 5100, 5500),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 7000, 11, 25100, 25500)};
    const Outcome run = correlate({dp, trace});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 3u);
    EXPECT_EQ(e2e[0]["pid"], 100);
    EXPECT_EQ(e2e[1]["pid"], 100);
    EXPECT_EQ(e2e[1]["t_first_ns"], 5100);
    EXPECT_EQ(e2e[2]["pid"], 200);
    EXPECT_EQ(e2e[2]["comm"], "other");
    EXPECT_EQ(e2e[2]["t_first_ns"], 25100);
    const auto clock = run.of_type("clock").at(0);
    EXPECT_EQ(clock["offset_ns"], off);  // bounds [off - 100, off + 100] from all three
    EXPECT_EQ(run.of_type("app").size(), 2u);
}

TEST(Join, receive_completion_names_the_peer_and_the_delivery) {
    // SEND 64 B from kApp QP 17 to kServer QP 50 (rq_psn 1000), RECV polled at 5000 on hB.
    // The dataplane did not pair the endpoints: the host's pair is reported for both.
    std::vector<json> trace = connected_qp();
    trace.push_back(kServer.create_qp(100, "0xd0", 50));
    trace.push_back(kServer.rtr(110, "0xd0", 50, "10.0.0.1", 17, 1000));
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "SEND", 64));
    trace.push_back(kApp.poll(2000, 17, 1, "SEND"));
    trace.push_back(kServer.poll(5000, 50, 77, "RECV", 0, 64));
    std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, std::nullopt, "SEND", 1000, 64, 1100, 1500)};
    for (const auto& [ip, qpn] : {std::pair{"10.0.0.1", 17}, std::pair{"10.0.0.2", 50}})
        dp.push_back({{"type", "qp"},
                      {"ip", ip},
                      {"qpn", qpn},
                      {"peer_ip", nullptr},
                      {"peer_qpn", nullptr},
                      {"pair_by", nullptr},
                      {"transport", "RC"},
                      {"pkts", 1},
                      {"bytes", 64},
                      {"cnps", 2},
                      {"ecn_ce", 3},
                      {"t_first_ns", 1100},
                      {"t_last_ns", 1500},
                      {"final", true}});
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 1u);
    EXPECT_EQ(e2e[0]["src_qpn"], 17);  // from the host's view: the dataplane had none
    EXPECT_EQ(e2e[0]["peer_pid"], 300);
    EXPECT_EQ(e2e[0]["peer_comm"], "server");
    EXPECT_EQ(e2e[0]["peer_host"], "hB");
    EXPECT_EQ(e2e[0]["t_recv_poll_ns"], 5000);
    const auto pairs = run.of_type("pair");
    ASSERT_EQ(pairs.size(), 2u);
    EXPECT_EQ(pairs[0]["ip"], "10.0.0.1");
    EXPECT_EQ(pairs[0]["peer_qpn"], 50);
    EXPECT_EQ(pairs[0]["pair_by"], "host");
    EXPECT_EQ(pairs[0]["dp_pair_by"], nullptr);
    EXPECT_EQ(pairs[1]["ip"], "10.0.0.2");
    EXPECT_EQ(pairs[1]["pid"], 300);
    const auto app = run.of_type("app").at(0);
    EXPECT_EQ(app["cnps"], 2);           // at its own endpoint
    EXPECT_EQ(app["ecn_ce"], 3);         // received by its endpoint
    EXPECT_EQ(app["ecn_ce_caused"], 3);  // at its peer's endpoint
    EXPECT_EQ(run.summary()["recv_matched"], 1);
}

TEST(Join, conflicting_dataplane_pair_loses_to_the_host) {
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "SEND", 64));
    trace.push_back(kApp.poll(2000, 17, 1, "SEND"));
    const Outcome run = correlate(
        {{wire_msg("10.0.0.1", "10.0.0.2", 50, 99, "SEND", 1000, 64, 1100, 1500)}, trace});
    EXPECT_EQ(run.of_type("e2e").at(0)["src_qpn"], 17);
    EXPECT_EQ(run.summary()["pair_conflicts"], 1);
}

TEST(Join, duplicate_messages_from_two_observers_count_once) {
    std::vector<json> trace = connected_qp();
    trace.push_back(kApp.post_send(1000, "0xa0", 17, 1, "SEND", 64));
    trace.push_back(kApp.poll(2000, 17, 1, "SEND"));
    const json early = wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 1100, 1500);
    const json late = wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 1180, 1420);
    const Outcome run = correlate({{late}, {early}, trace}, {"--same-clock"});
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 1u);
    EXPECT_EQ(e2e[0]["t_first_ns"], 1100);
    EXPECT_EQ(run.summary()["duplicate_msgs"], 1);
}

TEST(Join, same_key_a_second_later_is_another_message) {
    // The QPN and PSN used again 2 s later (a new connection): not a duplicate.
    std::vector<json> trace = connected_qp();
    for (int64_t t : {1000, 2'000'001'000}) {
        trace.push_back(kApp.post_send(t, "0xa0", 17, 1, "SEND", 64));
        trace.push_back(kApp.poll(t + 1000, 17, 1, "SEND"));
    }
    const Outcome run = correlate(
        {{wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 1100, 1500),
          wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 2'000'001'100, 2'000'001'500)},
         trace},
        {"--same-clock"});
    EXPECT_EQ(run.of_type("e2e").size(), 2u);
    EXPECT_EQ(run.summary()["duplicate_msgs"], 0);
}

TEST(Join, messages_without_a_traced_requester_are_counted) {
    std::vector<json> trace = connected_qp();
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 77, 33, "SEND", 5, 64, 1100, 1500),  // traced host
        wire_msg("10.0.0.9", "10.0.0.2", 50, 4, "SEND", 5, 64, 1100, 1500)};  // untraced
    const Outcome run = correlate({dp, trace});
    EXPECT_TRUE(run.of_type("e2e").empty());
    EXPECT_EQ(run.summary()["src_untraced"], 1);
    EXPECT_EQ(run.summary()["src_host_untraced"], 1);
}

}  // namespace
}  // namespace insert::correlate::test
