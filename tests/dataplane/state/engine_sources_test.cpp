// docs/semantics.md "Sources": an endpoint's state is kept per source IP, so that packets
// from a third host never touch the sequence state, messages or pair of the endpoint's own
// requester (SPEC invariant 4), and results do not depend on which worker a host pair
// lands on (invariant 1). Events, windowed per destination rather than per part:
// engine_events_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "dataplane/proto/opcodes.hpp"
#include "dataplane/state/qp_merge.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;
using state::MsgStatus;
using state::PairBy;

constexpr const char* kReq = "10.0.0.1";
constexpr const char* kResp = "10.0.0.2";
constexpr const char* kStray = "10.0.0.9";
constexpr uint32_t kReqQp = 17, kRespQp = 34;

void send_acked(EngineHarness& h, uint32_t psn, uint64_t& ts) {
    h.send(Pkt{kReq, kResp, kSendOnly, kRespQp, psn, 64}, ts++);
    Pkt ack{kResp, kReq, kAck, kReqQp, psn, 0};
    ack.syndrome = 0x1F;
    h.send(ack, ts++);
}

std::vector<state::MsgRecord> msgs_from(const EngineHarness& h, const char* src) {
    const auto ip = *proto::IpAddress::parse(src);
    std::vector<state::MsgRecord> out;
    for (const auto& m : h.msgs())
        if (m.src_ip == ip) out.push_back(m);
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.psn_first < b.psn_first; });
    return out;
}

void expect_victim_intact(const EngineHarness& h) {
    const auto victim = msgs_from(h, kReq);
    ASSERT_EQ(victim.size(), 10u);
    for (uint32_t i = 0; i < 10; ++i) {
        EXPECT_EQ(victim[i].psn_first, 100 + i);
        EXPECT_EQ(victim[i].status, MsgStatus::ok);
        EXPECT_TRUE(victim[i].has_ack);
        EXPECT_EQ(victim[i].retx_pkts, 0u);
        EXPECT_TRUE(victim[i].has_src_qpn);
        EXPECT_EQ(victim[i].src_qpn, kReqQp);
    }
}

// The example of docs/semantics.md "Sources": SENDs PSN 100-109 each ACKed, and one
// well-formed SEND from a third host with PSN 5000 after the fifth.
TEST(EngineSources, a_third_hosts_send_is_its_own_message_and_leaves_the_connection_intact) {
    EngineHarness h;
    uint64_t ts = 1;
    for (uint32_t psn = 100; psn < 110; ++psn) {
        if (psn == 105) h.send(Pkt{kStray, kResp, kSendOnly, kRespQp, 5000, 64}, ts++);
        send_acked(h, psn, ts);
    }
    h.finish(ts);
    expect_victim_intact(h);
    const auto stray = msgs_from(h, kStray);
    ASSERT_EQ(stray.size(), 1u);
    EXPECT_EQ(stray[0].psn_first, 5000u);
    EXPECT_EQ(stray[0].dst_qpn, kRespQp);
    EXPECT_FALSE(stray[0].has_src_qpn);  // its part is paired with nothing
    EXPECT_EQ(stray[0].status, MsgStatus::incomplete);
    // The endpoint counts every packet; nothing was a duplicate or a gap.
    const auto q = h.qp(kResp, kRespQp);
    EXPECT_EQ(q.pkts, 11u);
    EXPECT_EQ(q.msgs[static_cast<int>(state::MsgOp::send)], 11u);
    EXPECT_EQ(q.dup_pkts, 0u);
    EXPECT_EQ(q.ooo_pkts, 0u);
    EXPECT_EQ(q.gaps, 0u);
    EXPECT_EQ(q.missing, 0u);
    EXPECT_EQ(q.peer_qpn, kReqQp);
    EXPECT_EQ(q.peer_ip, *proto::IpAddress::parse(kReq));
    EXPECT_EQ(h.engine->counters().endpoints.load(), 2u);  // (ip, qpn): two endpoints
    EXPECT_EQ(h.engine->counters().connections.load(), 1u);
}

TEST(EngineSources, a_stray_packet_before_the_first_response_does_not_prevent_pairing) {
    EngineHarness h;
    uint64_t ts = 1;
    h.send(Pkt{kReq, kResp, kSendOnly, kRespQp, 100, 64}, ts++);
    h.send(Pkt{kStray, kResp, kSendOnly, kRespQp, 5000, 64}, ts++);
    Pkt ack{kResp, kReq, kAck, kReqQp, 100, 0};
    ack.syndrome = 0x1F;
    h.send(ack, ts++);
    for (uint32_t psn = 101; psn < 110; ++psn) send_acked(h, psn, ts);
    h.finish(ts);
    expect_victim_intact(h);
    EXPECT_EQ(h.qp(kResp, kRespQp).pair_by, PairBy::sport);
}

TEST(EngineSources, a_third_hosts_ack_completes_nothing) {
    EngineHarness h;
    uint64_t ts = 1;
    send_acked(h, 100, ts);  // paired
    h.send(Pkt{kReq, kResp, kSendOnly, kRespQp, 101, 64}, ts++);
    // An ACK for PSN 101 from a host that is not the responder: not a response to 101.
    Pkt forged{kStray, kReq, kAck, kReqQp, 101, 0};
    forged.syndrome = 0x1F;
    h.send(forged, ts++);
    EXPECT_EQ(h.msgs().size(), 1u);  // 101 still open
    Pkt ack{kResp, kReq, kAck, kReqQp, 101, 0};
    ack.syndrome = 0x1F;
    const uint64_t t_ack = ts;
    h.send(ack, ts++);
    h.finish(ts);
    const auto m = msgs_from(h, kReq);
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[1].t_ack_ns, t_ack);
    EXPECT_EQ(h.qp(kReq, kReqQp).pkts, 3u);  // every packet to the endpoint counts
}

TEST(EngineSources, parts_go_idle_on_their_own_and_later_packets_find_the_others) {
    state::EngineConfig cfg = EngineHarness::small_config();
    cfg.idle_timeout_ns = 1000;
    EngineHarness h(cfg);
    // The index's part (first source) goes idle, the stray's part lives on.
    h.send(Pkt{kReq, kResp, kSendOnly, kRespQp, 100, 64}, 100);
    h.send(Pkt{kStray, kResp, kSendOnly, kRespQp, 5000, 64}, 900);
    h.engine->tick(1500);  // the first part is idle for 1400 ns
    EXPECT_EQ(h.engine->counters().evicted.load(), 1u);
    EXPECT_EQ(h.engine->counters().endpoints_live.load(), 1u);
    // The stray's part keeps its sequence: 5001 is its next PSN, no gap.
    h.send(Pkt{kStray, kResp, kSendOnly, kRespQp, 5001, 64}, 1600);
    // A new part for the first source starts afresh.
    h.send(Pkt{kReq, kResp, kSendOnly, kRespQp, 300, 64}, 1700);
    h.finish(1800);
    uint64_t final_pkts = 0, evicted_pkts = 0, gaps = 0;
    for (const auto& r : h.sink.records)
        if (r.type == state::RecordType::qp && r.qp.final) {
            (r.qp.evicted ? evicted_pkts : final_pkts) += r.qp.pkts;
            gaps += r.qp.gaps;
            // The evicted part is the first source's; the endpoint lives on in the other.
            if (r.qp.evicted) {
                EXPECT_EQ(r.qp.src_ip, *proto::IpAddress::parse(kReq));
                EXPECT_FALSE(r.qp.endpoint_gone);
            }
        }
    EXPECT_EQ(evicted_pkts, 1u);
    EXPECT_EQ(final_pkts, 3u);
    EXPECT_EQ(gaps, 0u);
    EXPECT_EQ(msgs_from(h, kStray).size(), 2u);
}

TEST(EngineSources, qp_records_merge_the_same_in_any_order) {
    state::QpRecord a, b, c;
    a.pkts = 1, b.pkts = 2, c.pkts = 4;
    a.t_first_ns = 30, b.t_first_ns = 10, c.t_first_ns = 20;
    a.t_last_ns = 35, b.t_last_ns = 50, c.t_last_ns = 25;
    a.transport = state::TransportFamily::uc, a.t_transport_ns = 30;
    c.transport = state::TransportFamily::rc, c.t_transport_ns = 20;  // b: CNPs only
    b.pair_by = PairBy::ip, b.peer_ip = *proto::IpAddress::parse("10.0.0.7"), b.peer_qpn = 3;
    c.pair_by = PairBy::sport, c.peer_ip = *proto::IpAddress::parse("10.0.0.5"), c.peer_qpn = 9;
    const state::QpRecord parts[] = {a, b, c};
    const int orders[][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (const auto& o : orders) {
        state::QpRecord m = parts[o[0]];
        state::merge_qp(m, parts[o[1]]);
        state::merge_qp(m, parts[o[2]]);
        EXPECT_EQ(m.pkts, 7u);
        EXPECT_EQ(m.t_first_ns, 10u);
        EXPECT_EQ(m.t_last_ns, 50u);
        EXPECT_EQ(m.transport, state::TransportFamily::rc);  // the earliest non-CNP packet's
        EXPECT_EQ(m.pair_by, PairBy::sport);                 // the lower peer IP
        EXPECT_EQ(m.peer_qpn, 9u);
    }
}

// docs/semantics.md "Table full": endpoints refused are counted, not only their packets.
TEST(EngineTable, refused_endpoints_are_counted_once_each) {
    state::EngineConfig cfg = EngineHarness::small_config();
    cfg.max_endpoints = 2;
    EngineHarness h(cfg);
    for (uint32_t q = 1; q <= 7; ++q)
        for (uint32_t psn = 0; psn < 3; ++psn) h.send(Pkt{kReq, kResp, kSendOnly, q, psn, 4}, q);
    h.finish(10);
    EXPECT_EQ(h.engine->counters().table_full.load(), 15u);  // 5 endpoints x 3 packets
    EXPECT_EQ(state::refused_endpoints(h.engine->counters().table_full_bits.load()), 5u);
}

}  // namespace
}  // namespace insert::test
