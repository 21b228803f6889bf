// SPEC.md sections 3, 4 and 6: classification, pairing and congestion counters.
#include <gtest/gtest.h>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/state/cm_mad.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;
using state::PairBy;

constexpr const char* kA = "10.0.0.1";
constexpr const char* kB = "10.0.0.2";

TEST(EngineClassification, new_late_dup_and_cumulative_gaps) {
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 5, 100, 4}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 5, 104, 4}, 2);  // gap: 101..103
    h.send(Pkt{kA, kB, kSendOnly, 5, 102, 4}, 3);  // late: fills a hole
    h.send(Pkt{kA, kB, kSendOnly, 5, 102, 4}, 4);  // dup
    h.send(Pkt{kA, kB, kSendOnly, 5, 100, 4}, 5);  // dup
    h.finish(6);
    const auto q = h.qp(kB, 5);
    EXPECT_EQ(q.gaps, 1u);
    EXPECT_EQ(q.missing, 3u);  // not reduced by the late packet
    EXPECT_EQ(q.ooo_pkts, 1u);
    EXPECT_EQ(q.dup_pkts, 2u);
    EXPECT_EQ(q.pkts, 5u);
    EXPECT_EQ(q.bytes, 20u);
    EXPECT_EQ(q.t_first_ns, 1u);
    EXPECT_EQ(q.t_last_ns, 5u);
}

TEST(EngineClassification, psn_older_than_the_window_is_dup_even_if_never_seen) {
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 5, 2000, 4}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 5, 2000 - 1024, 4}, 2);
    h.send(Pkt{kA, kB, kSendOnly, 5, 2000 - 1023, 4}, 3);
    h.finish(4);
    const auto q = h.qp(kB, 5);
    EXPECT_EQ(q.dup_pkts, 1u);
    EXPECT_EQ(q.ooo_pkts, 1u);
}

TEST(EngineClassification, responses_are_never_classified) {
    EngineHarness h;
    h.send(Pkt{kB, kA, kAck, 9, 50, 0, 1, proto::aeth_ack()}, 1);
    h.send(Pkt{kB, kA, kAck, 9, 40, 0, 1, proto::aeth_ack()}, 2);
    h.finish(3);
    const auto q = h.qp(kA, 9);
    EXPECT_EQ(q.dup_pkts + q.ooo_pkts + q.gaps, 0u);
    EXPECT_EQ(q.pkts, 2u);
}

TEST(EngineCongestion, cnp_and_ecn_ce_count_at_the_receiving_endpoint) {
    EngineHarness h;
    Pkt ce{kA, kB, kWriteOnly, 5, 1, 64};
    ce.ecn = 3;
    h.send(ce, 1);
    h.send(Pkt{kB, kA, kCnp, 7, 0, 0}, 2);
    h.send(Pkt{kB, kA, kCnp, 7, 0, 0}, 3);
    h.finish(4);
    EXPECT_EQ(h.qp(kB, 5).ecn_ce, 1u);
    const auto cnp_target = h.qp(kA, 7);
    EXPECT_EQ(cnp_target.cnps, 2u);
    EXPECT_EQ(cnp_target.transport, state::TransportFamily::unknown);  // only CNPs
    // Both CNPs fall in one second of capture time: one event carries them.
    const auto events = h.events(state::EventKind::cnp);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].count, 2u);
    EXPECT_EQ(events[0].t_ns, 2u);
}

TEST(EnginePairing, symmetric_source_port_pairs_by_sport_when_hosts_have_two_connections) {
    EngineHarness h;
    // Two connections between A and B; each uses its own symmetric source port.
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1, 4, 1000}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 0x23, 1, 4, 2000}, 2);
    h.send(Pkt{kB, kA, kAck, 0x11, 1, 0, 1000, proto::aeth_ack()}, 3);
    h.send(Pkt{kB, kA, kAck, 0x12, 1, 0, 2000, proto::aeth_ack()}, 4);
    h.finish(5);
    const auto a1 = h.qp(kA, 0x11);
    EXPECT_EQ(a1.pair_by, PairBy::sport);
    EXPECT_EQ(a1.peer_qpn, 0x22u);
    EXPECT_EQ(h.qp(kB, 0x23).pair_by, PairBy::sport);
    EXPECT_EQ(h.qp(kB, 0x23).peer_qpn, 0x12u);
    for (const auto& m : h.msgs()) EXPECT_TRUE(m.has_ack);
}

TEST(EnginePairing, per_qp_source_ports_fall_back_to_ip_for_a_single_connection) {
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1, 4, 1000}, 1);
    h.send(Pkt{kB, kA, kAck, 0x11, 1, 0, 3000, proto::aeth_ack()}, 2);
    h.finish(3);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::ip);
    EXPECT_EQ(h.qp(kB, 0x22).pair_by, PairBy::ip);
    EXPECT_EQ(h.qp(kB, 0x22).peer_qpn, 0x11u);
}

TEST(EnginePairing, two_responders_of_opposite_connections_are_never_paired) {
    // A->B on (0x11 -> 0x22) and B->A on (0x33 -> 0x44): before any response, the two
    // responders 0x22 and 0x44 are each the only endpoint receiving from the other host.
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 10, 4, 1000}, 1);
    h.send(Pkt{kB, kA, kSendOnly, 0x44, 900, 4, 2000}, 2);
    h.send(Pkt{kB, kA, kAck, 0x11, 10, 0, 3000, proto::aeth_ack()}, 3);
    h.finish(4);
    EXPECT_NE(h.qp(kB, 0x22).peer_qpn, 0x44u);
    EXPECT_NE(h.qp(kA, 0x44).peer_qpn, 0x22u);
    // At the ACK, A has two endpoints receiving from B (0x11, 0x44): ip cannot decide,
    // but the ACK's PSN lies only in 0x22's request window.
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::psn);
    EXPECT_EQ(h.qp(kA, 0x11).peer_qpn, 0x22u);
    EXPECT_EQ(h.qp(kA, 0x44).pair_by, PairBy::none);
}

TEST(EnginePairing, response_psn_inside_one_request_window_pairs_by_psn) {
    // Two connections between A and B with per-QP source ports (Soft-RoCE style): neither
    // sport nor ip applies, but their PSN spaces are far apart.
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1000, 4, 1000}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 0x23, 500000, 4, 1001}, 2);
    h.send(Pkt{kB, kA, kAck, 0x12, 500000, 0, 3001, proto::aeth_ack()}, 3);
    h.send(Pkt{kB, kA, kAck, 0x11, 1000, 0, 3000, proto::aeth_ack()}, 4);
    h.finish(5);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::psn);
    EXPECT_EQ(h.qp(kA, 0x11).peer_qpn, 0x22u);
    EXPECT_EQ(h.qp(kA, 0x12).pair_by, PairBy::psn);
    EXPECT_EQ(h.qp(kA, 0x12).peer_qpn, 0x23u);
    for (const auto& m : h.msgs()) EXPECT_TRUE(m.has_ack);
}

TEST(EnginePairing, response_psn_in_two_windows_stays_unpaired) {
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1000, 4, 1000}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 0x23, 1500, 4, 1001}, 2);
    h.send(Pkt{kB, kA, kAck, 0x11, 1000, 0, 3000, proto::aeth_ack()}, 3);
    h.finish(4);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::none);
}

// A CM MAD as a UD SEND Only payload to QP 1.
std::vector<uint8_t> cm_mad(uint16_t attr, uint32_t local_comm, uint32_t remote_comm,
                            uint32_t qpn) {
    std::vector<uint8_t> mad(256, 0);
    mad[0] = 1;
    mad[1] = state::kMgmtClassCm;
    mad[2] = 2;
    mad[16] = static_cast<uint8_t>(attr >> 8);
    mad[17] = static_cast<uint8_t>(attr);
    auto put32 = [&](std::size_t off, uint32_t v) {
        for (int i = 0; i < 4; ++i) mad[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
    };
    auto put24 = [&](std::size_t off, uint32_t v) {
        for (int i = 0; i < 3; ++i) mad[off + i] = static_cast<uint8_t>(v >> (16 - 8 * i));
    };
    put32(24, local_comm);
    if (attr == state::kCmAttrReq) put24(state::kCmReqLocalQpnOffset, qpn);
    if (attr == state::kCmAttrRep) {
        put32(state::kCmRepRemoteCommOffset, remote_comm);
        put24(state::kCmRepLocalQpnOffset, qpn);
    }
    return mad;
}

// CM MADs are UD SENDs to QP 1 with a DETH; the harness' Pkt has no payload bytes, so
// these frames are built directly.
void send_mad(EngineHarness& h, const char* src, const char* dst, const std::vector<uint8_t>& mad,
              uint64_t ts) {
    proto::FrameSpec s;
    s.src_ip = *proto::IpAddress::parse(src);
    s.dst_ip = *proto::IpAddress::parse(dst);
    s.t.bth.opcode = kUdSendOnly;
    s.t.bth.dest_qp = 1;
    s.t.deth = {0x80010000, 1};
    s.payload = mad.data();
    s.payload_len = static_cast<uint32_t>(mad.size());
    std::vector<uint8_t> buf(proto::frame_length(s));
    ASSERT_EQ(proto::build_frame(s, buf), buf.size());
    proto::ParsedPacket p;
    ASSERT_EQ(proto::parse_frame(buf, p), proto::Verdict::roce);
    h.engine->process(p, ts);
}

TEST(EnginePairing, cm_exchange_wins_over_ambiguous_ports) {
    EngineHarness h;
    send_mad(h, kA, kB, cm_mad(state::kCmAttrReq, 0x1111, 0, 0x11), 1);
    send_mad(h, kB, kA, cm_mad(state::kCmAttrRep, 0x2222, 0x1111, 0x22), 2);
    // A second connection between the same hosts, all on one source port.
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1, 4, 7}, 3);
    h.send(Pkt{kA, kB, kSendOnly, 0x23, 1, 4, 7}, 4);
    h.send(Pkt{kB, kA, kAck, 0x11, 1, 0, 7, proto::aeth_ack()}, 5);
    h.finish(6);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::cm);
    EXPECT_EQ(h.qp(kA, 0x11).peer_qpn, 0x22u);
    EXPECT_EQ(h.qp(kB, 0x22).pair_by, PairBy::cm);
    EXPECT_EQ(h.qp(kB, 0x23).pair_by, PairBy::none);
    EXPECT_EQ(h.qp(kA, 1).transport, state::TransportFamily::ud);
    EXPECT_EQ(h.qp(kB, 1).transport, state::TransportFamily::ud);
    EXPECT_EQ(h.engine->counters().connections.load(), 1u);
}

// semantics.md `cm`: the pair applies when both endpoints exist, on the first packet after
// that to either. Here the requester's endpoint comes into existence last, through a CNP
// (it exists though it received only CNPs), and the responder pairs on its next request.
// Before, the responder tried again only after some unrelated change, so the packet it
// paired on depended on the worker's other traffic (1 and 2 workers differed).
TEST(EnginePairing, cm_pair_applies_once_the_second_endpoint_exists) {
    EngineHarness h;
    send_mad(h, kA, kB, cm_mad(state::kCmAttrReq, 0x1111, 0, 0x11), 1);
    send_mad(h, kB, kA, cm_mad(state::kCmAttrRep, 0x2222, 0x1111, 0x22), 2);
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1, 4, 7}, 3);  // (B, 0x22) exists, (A, 0x11) not yet
    h.send(Pkt{kB, kA, kCnp, 0x11, 0, 0, 7}, 4);       // creates (A, 0x11)
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 2, 4, 7}, 5);  // pairs here
    h.finish(6);
    const auto pairs = h.events(state::EventKind::pair);
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0].t_ns, 5u);
    EXPECT_EQ(h.qp(kB, 0x22).pair_by, PairBy::cm);
    EXPECT_EQ(h.qp(kB, 0x22).peer_qpn, 0x11u);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, PairBy::cm);
}

TEST(EngineTable, full_table_is_counted_and_existing_endpoints_keep_working) {
    state::EngineConfig cfg = EngineHarness::small_config();
    cfg.max_endpoints = 2;
    EngineHarness h(cfg);
    h.send(Pkt{kA, kB, kSendOnly, 1, 1, 4}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 2, 1, 4}, 2);
    h.send(Pkt{kA, kB, kSendOnly, 3, 1, 4}, 3);  // no room
    h.send(Pkt{kA, kB, kSendOnly, 1, 2, 4}, 4);
    h.finish(5);
    EXPECT_EQ(h.engine->counters().table_full.load(), 1u);
    EXPECT_EQ(h.engine->counters().endpoints.load(), 2u);
    EXPECT_EQ(h.qp(kB, 1).pkts, 2u);
}

TEST(EngineTable, idle_endpoints_are_evicted_with_a_final_record) {
    state::EngineConfig cfg = EngineHarness::small_config();
    cfg.idle_timeout_ns = 1000;
    EngineHarness h(cfg);
    h.send(Pkt{kA, kB, kSendOnly, 1, 1, 4}, 100);
    h.engine->tick(500);
    EXPECT_EQ(h.engine->counters().evicted.load(), 0u);
    h.engine->tick(2000);
    EXPECT_EQ(h.engine->counters().evicted.load(), 1u);
    EXPECT_EQ(h.engine->counters().endpoints_live.load(), 0u);
    EXPECT_EQ(h.qp(kB, 1).pkts, 1u);
    // Its `timeout` event is in the window of second 0, which a tick past it closes.
    EXPECT_EQ(h.events(state::EventKind::timeout).size(), 0u);
    h.engine->tick(1'000'000'000);
    EXPECT_EQ(h.events(state::EventKind::timeout).size(), 1u);
    ASSERT_EQ(h.msgs().size(), 1u);
    EXPECT_EQ(h.msgs()[0].status, state::MsgStatus::incomplete);
}

TEST(EnginePairing, a_table_at_capacity_still_pairs_every_connection) {
    // One connection per host pair, each with its own source port: every endpoint needs a
    // per-IP and a per-port host-pair entry of its own. The table holds exactly the
    // endpoints; the pairing tables must hold what they need, or connections go unpaired
    // and their messages never complete.
    constexpr uint32_t kConnections = 64;
    state::EngineConfig cfg;
    cfg.max_endpoints = 2 * kConnections;
    EngineHarness h(cfg);
    for (uint32_t c = 0; c < kConnections; ++c) {
        const std::string req = "10.1.0." + std::to_string(c + 1);
        const std::string resp = "10.2.0." + std::to_string(c + 1);
        const auto sport = static_cast<uint16_t>(50000 + c);
        h.send(Pkt{req, resp, kWriteOnly, 0x100 + c, 7, 64, sport, 0, 0x1000, 5, 64}, 10 * c + 1);
        h.send(Pkt{resp, req, kAck, 0x200 + c, 7, 0, sport, proto::aeth_ack()}, 10 * c + 2);
    }
    h.finish(10 * kConnections);
    EXPECT_EQ(h.engine->counters().connections.load(), kConnections);
    EXPECT_EQ(h.engine->counters().table_full.load(), 0u);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), kConnections);
    for (const auto& m : msgs) {
        EXPECT_TRUE(m.has_ack);
        EXPECT_EQ(m.status, state::MsgStatus::ok);
    }
}

}  // namespace
}  // namespace insert::test
