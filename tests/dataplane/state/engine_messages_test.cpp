// SPEC.md section 5: one test per message rule, values derived by hand from the SPEC.
#include <gtest/gtest.h>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/state/endpoint.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;
using state::MsgOp;
using state::MsgStatus;

constexpr const char* kA = "10.0.0.1";  // requester, QP 0x11
constexpr const char* kB = "10.0.0.2";  // responder, QP 0x22
constexpr uint32_t kQa = 0x11, kQb = 0x22;
const uint8_t kOk = proto::aeth_ack();  // ACK syndrome

Pkt req(uint8_t opcode, uint32_t psn, uint32_t payload = 0) {
    return Pkt{kA, kB, opcode, kQb, psn, payload};
}
Pkt resp(uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t payload = 0) {
    Pkt p{kB, kA, opcode, kQa, psn, payload};
    p.syndrome = syndrome;
    return p;
}

TEST(EngineMessages, write_only_completes_on_ack_with_exact_latency) {
    EngineHarness h;
    Pkt w = req(kWriteOnly, 100, 64);
    w.va = 0x1000;
    w.rkey = 0xabc;
    w.dma_len = 64;
    h.send(w, 1'000);
    h.send(resp(kAck, 100, kOk), 4'500);
    h.finish(10'000);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    const auto& m = msgs[0];
    EXPECT_EQ(m.op, MsgOp::write);
    EXPECT_EQ(m.psn_first, 100u);
    EXPECT_EQ(m.psn_last, 100u);
    EXPECT_EQ(m.pkts, 1u);
    EXPECT_EQ(m.bytes, 64u);
    EXPECT_TRUE(m.has_va);
    EXPECT_EQ(m.va, 0x1000u);
    EXPECT_EQ(m.rkey, 0xabcu);
    EXPECT_EQ(m.dma_len, 64u);
    EXPECT_TRUE(m.has_ack);
    EXPECT_EQ(m.t_first_ns, 1'000u);
    EXPECT_EQ(m.t_last_ns, 1'000u);
    EXPECT_EQ(m.t_ack_ns, 4'500u);
    EXPECT_EQ(m.status, MsgStatus::ok);
    EXPECT_TRUE(m.has_src_qpn);
    EXPECT_EQ(m.src_qpn, kQa);
    const auto qb = h.qp(kB, kQb);
    EXPECT_EQ(qb.msgs[static_cast<int>(MsgOp::write)], 1u);
    // Both directions used one UDP source port (the harness default): the sport rule.
    EXPECT_EQ(qb.pair_by, state::PairBy::sport);
}

TEST(EngineMessages, send_assembles_when_middle_arrives_before_first) {
    EngineHarness h;
    h.send(req(kSendMiddle, 11, 256), 20);
    h.send(req(kSendFirst, 10, 256), 30);
    Pkt last = req(kSendLastImm, 12, 100);
    last.imm = 0xdeadbeef;
    h.send(last, 40);
    h.send(resp(kAck, 12, kOk), 90);
    h.finish(100);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].op, MsgOp::send);
    EXPECT_EQ(msgs[0].psn_first, 10u);
    EXPECT_EQ(msgs[0].psn_last, 12u);
    EXPECT_EQ(msgs[0].pkts, 3u);
    EXPECT_EQ(msgs[0].bytes, 612u);
    EXPECT_EQ(msgs[0].t_first_ns, 20u);
    EXPECT_EQ(msgs[0].t_last_ns, 40u);
    EXPECT_EQ(msgs[0].t_ack_ns, 90u);
    EXPECT_TRUE(msgs[0].has_imm);
    EXPECT_EQ(msgs[0].imm, 0xdeadbeefu);
    EXPECT_FALSE(msgs[0].has_va);
    EXPECT_FALSE(msgs[0].has_dma_len);
    const auto qb = h.qp(kB, kQb);
    EXPECT_EQ(qb.ooo_pkts, 1u);  // First arrived after a newer PSN
    EXPECT_EQ(qb.gaps, 0u);      // 11 was the direction's first packet
}

// docs/semantics.md "Messages": a packet past a hole of a SEND whose end is unknown is held,
// since the hole may hold that SEND's Last and the next message's First (as here: requests
// sprayed over paths, insert-gen `reordering` seed 102).
TEST(EngineMessages, packet_past_a_hole_of_an_open_send_goes_to_the_next_message) {
    EngineHarness h;
    h.send(req(kSendFirst, 309, 1024), 100);
    h.send(req(kSendMiddle, 310, 1024), 110);
    h.send(req(kSendMiddle, 311, 1024), 120);
    h.send(req(kSendMiddle, 314, 1024), 130);  // the next SEND's, before its First
    h.send(req(kSendLast, 312, 565), 140);
    h.send(req(kSendFirst, 313, 1024), 150);
    h.send(req(kSendMiddle, 315, 1024), 160);
    h.send(req(kSendLast, 317, 141), 170);
    h.send(req(kSendMiddle, 316, 1024), 180);
    h.send(resp(kAck, 317, kOk), 200);
    h.finish(300);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].psn_first, 309u);
    EXPECT_EQ(msgs[0].psn_last, 312u);
    EXPECT_EQ(msgs[0].pkts, 4u);
    EXPECT_EQ(msgs[0].bytes, 3u * 1024 + 565);
    EXPECT_EQ(msgs[0].t_last_ns, 140u);
    EXPECT_EQ(msgs[0].t_ack_ns, 200u);
    EXPECT_EQ(msgs[1].psn_first, 313u);
    EXPECT_EQ(msgs[1].psn_last, 317u);
    EXPECT_EQ(msgs[1].pkts, 5u);
    EXPECT_EQ(msgs[1].bytes, 4u * 1024 + 141);
    EXPECT_EQ(msgs[1].t_first_ns, 130u);  // 314, observed before its First
    EXPECT_EQ(msgs[1].t_last_ns, 180u);
    EXPECT_EQ(msgs[1].t_ack_ns, 200u);
    EXPECT_EQ(msgs[1].status, MsgStatus::ok);
}

// The Last of one SEND and the First of the next lost before the observer (insert-gen
// `losses` seed 119): the next SEND's Middles and Last arrive while the first is open,
// and the receiver's NAK makes the sender go back.
TEST(EngineMessages, send_last_and_next_first_lost_before_observer) {
    EngineHarness h;
    h.send(req(kSendFirst, 16, 1024), 100);
    h.send(req(kSendMiddle, 17, 1024), 110);
    h.send(req(kSendMiddle, 18, 1024), 120);
    // 19 (Last) and 20 (the next First) lost.
    h.send(req(kSendMiddle, 21, 1024), 130);
    h.send(req(kSendMiddle, 22, 1024), 140);
    h.send(req(kSendLast, 23, 38), 150);
    h.send(resp(kAck, 19, proto::aeth_nak(proto::NakCode::psn_seq_error)), 160);
    h.send(req(kSendLast, 19, 497), 170);
    h.send(req(kSendFirst, 20, 1024), 180);
    h.send(req(kSendMiddle, 21, 1024), 190);
    h.send(req(kSendMiddle, 22, 1024), 200);
    h.send(req(kSendLast, 23, 38), 210);
    h.send(resp(kAck, 23, kOk), 250);
    h.finish(300);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].psn_first, 16u);
    EXPECT_EQ(msgs[0].psn_last, 19u);
    EXPECT_EQ(msgs[0].pkts, 4u);
    EXPECT_EQ(msgs[0].bytes, 3u * 1024 + 497);
    EXPECT_EQ(msgs[0].naks, 1u);  // the NAK's PSN is its Last
    EXPECT_EQ(msgs[0].retx_pkts, 0u);
    EXPECT_EQ(msgs[0].t_last_ns, 170u);
    EXPECT_EQ(msgs[0].t_ack_ns, 250u);
    EXPECT_EQ(msgs[1].psn_first, 20u);
    EXPECT_EQ(msgs[1].psn_last, 23u);
    EXPECT_EQ(msgs[1].pkts, 4u);
    EXPECT_EQ(msgs[1].bytes, 3u * 1024 + 38);
    EXPECT_EQ(msgs[1].retx_pkts, 3u);  // 21, 22, 23 again after the go-back
    EXPECT_EQ(msgs[1].naks, 0u);
    EXPECT_EQ(msgs[1].t_first_ns, 130u);
    EXPECT_EQ(msgs[1].t_ack_ns, 250u);
    EXPECT_EQ(msgs[1].status, MsgStatus::ok);
}

// Two holes, each hiding a SEND's First or Last, and more than 8 packets past them, each its
// own run: packets past a held Last are certainly not the
// open SEND's (that Last ends it or a later one), and the packets held past the first hole make
// room by joining the SEND they were held from, so nothing is dropped.
TEST(EngineMessages, packets_past_a_held_last_never_join_the_open_send) {
    EngineHarness h;
    h.send(req(kSendFirst, 82, 1024), 100);
    h.send(req(kSendMiddle, 83, 1024), 110);
    // 84 lost before the observer.
    h.send(req(kSendMiddle, 85, 1024), 120);
    h.send(req(kSendLast, 86, 500), 130);
    // 87, the next SEND's First, lost too.
    for (uint32_t psn = 88; psn <= 94; ++psn) h.send(req(kSendMiddle, psn, 1024), 100 + psn);
    h.send(req(kSendLast, 95, 300), 195);
    h.send(resp(kAck, 84, proto::aeth_nak(proto::NakCode::psn_seq_error)), 200);
    h.send(req(kSendMiddle, 84, 1024), 210);
    h.send(req(kSendMiddle, 85, 1024), 211);
    h.send(req(kSendLast, 86, 500), 212);
    h.send(req(kSendFirst, 87, 1024), 213);
    for (uint32_t psn = 88; psn <= 94; ++psn) h.send(req(kSendMiddle, psn, 1024), 126 + psn);
    h.send(req(kSendLast, 95, 300), 221);
    h.send(resp(kAck, 95, kOk), 300);
    h.finish(400);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].psn_first, 82u);
    EXPECT_EQ(msgs[0].psn_last, 86u);
    EXPECT_EQ(msgs[0].pkts, 5u);
    EXPECT_EQ(msgs[0].bytes, 4u * 1024 + 500);
    EXPECT_EQ(msgs[0].retx_pkts, 2u);
    EXPECT_EQ(msgs[0].naks, 1u);
    EXPECT_EQ(msgs[0].t_ack_ns, 300u);
    EXPECT_EQ(msgs[1].psn_first, 87u);
    EXPECT_EQ(msgs[1].psn_last, 95u);
    EXPECT_EQ(msgs[1].pkts, 9u);
    EXPECT_EQ(msgs[1].bytes, 8u * 1024 + 300);
    EXPECT_EQ(msgs[1].retx_pkts, 8u);
    EXPECT_EQ(msgs[1].t_first_ns, 188u);
    EXPECT_EQ(msgs[1].t_ack_ns, 300u);
    EXPECT_EQ(h.engine->counters().orphans_dropped.load(), 0u);
}

// A SEND's tail held past a hole, which began waiting for the SEND's First (a Middle
// sprayed ahead of it), and then as many more runs as there are holding slots (a WRITE
// whose First was lost, its Middles sprayed apart): the SEND's run makes room by joining
// the SEND, as a run held past the hole from the start would, rather than being dropped.
// Before the fix the round-robin victim was that run, Last included, and the SEND never
// completed (insert-gen stress_impairments seed 3019).
TEST(EngineMessages, run_held_before_its_first_makes_room_by_joining_its_send) {
    constexpr uint32_t kRuns = state::OrphanBlock::kSlots;
    constexpr uint32_t kLastPsn = 112 + 2 * kRuns - 1;  // the WRITE's Last; Middles before it
    EngineHarness h;
    h.send(req(kSendMiddle, 104, 256), 10);  // ahead of its First: held, waiting for it
    h.send(req(kSendFirst, 100, 256), 20);
    h.send(req(kSendMiddle, 101, 256), 21);
    h.send(req(kSendMiddle, 102, 256), 22);
    // 103 lost before the observer: 104 stays held past the hole, with 105-110.
    for (uint32_t psn = 105; psn <= 109; ++psn) h.send(req(kSendMiddle, psn, 256), 20 + psn - 100);
    h.send(req(kSendLast, 110, 10), 30);
    // WRITE First 111 lost; kRuns Middles, none next to another: kRuns more runs.
    for (uint32_t i = 0; i < kRuns; ++i) h.send(req(kWriteMiddle, 112 + 2 * i, 256), 40 + i);
    h.send(resp(kAck, 103, proto::aeth_nak(proto::NakCode::psn_seq_error)), 100);
    // Go back N from 103.
    for (uint32_t psn = 103; psn <= 109; ++psn) h.send(req(kSendMiddle, psn, 256), 110 + psn - 103);
    h.send(req(kSendLast, 110, 10), 117);
    Pkt first = req(kWriteFirst, 111, 256);
    first.va = 0x2000;
    first.rkey = 0x77;
    first.dma_len = (kLastPsn - 111) * 256 + 20;
    h.send(first, 120);
    for (uint32_t psn = 112; psn < kLastPsn; ++psn)
        h.send(req(kWriteMiddle, psn, 256), 120 + psn - 111);
    h.send(req(kWriteLast, kLastPsn, 20), 200);
    h.send(resp(kAck, kLastPsn, kOk), 300);
    h.finish(400);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].op, MsgOp::send);
    EXPECT_EQ(msgs[0].psn_first, 100u);
    EXPECT_EQ(msgs[0].psn_last, 110u);
    EXPECT_EQ(msgs[0].pkts, 11u);
    EXPECT_EQ(msgs[0].bytes, 10u * 256 + 10);
    EXPECT_EQ(msgs[0].retx_pkts, 7u);  // 104-110 again; 103 was new
    EXPECT_EQ(msgs[0].naks, 1u);
    EXPECT_EQ(msgs[0].t_first_ns, 10u);
    EXPECT_EQ(msgs[0].t_last_ns, 117u);
    EXPECT_EQ(msgs[0].t_ack_ns, 300u);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
    EXPECT_EQ(msgs[1].op, MsgOp::write);
    EXPECT_EQ(msgs[1].psn_first, 111u);
    EXPECT_EQ(msgs[1].psn_last, kLastPsn);
    EXPECT_EQ(msgs[1].pkts, kLastPsn - 111 + 1);
    EXPECT_EQ(msgs[1].bytes, (kLastPsn - 111) * 256u + 20);
    EXPECT_EQ(msgs[1].retx_pkts, kRuns);  // the Middles held before the First came
    EXPECT_EQ(msgs[1].t_first_ns, 40u);
    EXPECT_EQ(msgs[1].t_ack_ns, 300u);
    EXPECT_EQ(msgs[1].status, MsgStatus::ok);
    EXPECT_EQ(h.engine->counters().orphans_dropped.load(), 0u);
}

// A lost First is followed by a whole train of its packets (insert-gen's stress scenarios:
// 47 at MTU 256): held as one run of consecutive PSNs, not one slot per packet, so none is
// dropped however long the train.
TEST(EngineMessages, train_after_a_lost_first_is_held_whole) {
    EngineHarness h;
    // First 200 lost before the observer; Middles 201-230 and the Last 231 observed.
    for (uint32_t psn = 201; psn <= 230; ++psn) h.send(req(kSendMiddle, psn, 256), psn);
    h.send(req(kSendLast, 231, 17), 231);
    h.send(resp(kAck, 200, proto::aeth_nak(proto::NakCode::psn_seq_error)), 240);
    h.send(req(kSendFirst, 200, 256), 300);  // go back N: the whole message again
    for (uint32_t psn = 201; psn <= 230; ++psn) h.send(req(kSendMiddle, psn, 256), 100 + psn);
    h.send(req(kSendLast, 231, 17), 400);
    h.send(resp(kAck, 231, kOk), 500);
    h.finish(600);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].psn_first, 200u);
    EXPECT_EQ(msgs[0].psn_last, 231u);
    EXPECT_EQ(msgs[0].pkts, 32u);
    EXPECT_EQ(msgs[0].bytes, 31u * 256 + 17);
    EXPECT_EQ(msgs[0].retx_pkts, 31u);
    EXPECT_EQ(msgs[0].naks, 1u);
    EXPECT_EQ(msgs[0].t_first_ns, 201u);
    EXPECT_EQ(msgs[0].t_ack_ns, 500u);
    EXPECT_EQ(h.engine->counters().orphans_dropped.load(), 0u);
}

// Sprayed over paths, the train after a lost First arrives as separate runs: up to 16 are
// held (with 8, a 9th run's packets were dropped). Twelve here, then go back N.
TEST(EngineMessages, sprayed_train_after_a_lost_first_is_held_in_twelve_runs) {
    EngineHarness h;
    for (uint32_t psn = 301; psn <= 323; psn += 2) h.send(req(kSendMiddle, psn, 256), psn);
    h.send(resp(kAck, 300, proto::aeth_nak(proto::NakCode::psn_seq_error)), 400);
    h.send(req(kSendFirst, 300, 256), 500);
    for (uint32_t psn = 301; psn <= 323; ++psn) h.send(req(kSendMiddle, psn, 256), 200 + psn);
    h.send(req(kSendLast, 324, 17), 600);
    h.send(resp(kAck, 324, kOk), 700);
    h.finish(800);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].psn_first, 300u);
    EXPECT_EQ(msgs[0].psn_last, 324u);
    EXPECT_EQ(msgs[0].pkts, 25u);
    EXPECT_EQ(msgs[0].bytes, 24u * 256 + 17);
    EXPECT_EQ(msgs[0].retx_pkts, 12u);
    EXPECT_EQ(msgs[0].t_first_ns, 301u);
    EXPECT_EQ(msgs[0].t_ack_ns, 700u);
    EXPECT_EQ(h.engine->counters().orphans_dropped.load(), 0u);
}

// Held packets arriving in any order form one run (a packet before a run's start extends
// it, and one that fills the space between two runs joins them).
TEST(EngineMessages, held_packets_in_reverse_order_join_their_message) {
    EngineHarness h;
    h.send(req(kSendMiddle, 15, 100), 10);
    h.send(req(kSendMiddle, 13, 100), 20);
    h.send(req(kSendMiddle, 12, 100), 30);
    h.send(req(kSendMiddle, 14, 100), 40);  // joins the runs 12-13 and 15
    h.send(req(kSendFirst, 11, 100), 50);
    h.send(req(kSendLast, 16, 7), 60);
    h.send(resp(kAck, 16, kOk), 70);
    h.finish(100);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].psn_first, 11u);
    EXPECT_EQ(msgs[0].psn_last, 16u);
    EXPECT_EQ(msgs[0].pkts, 6u);
    EXPECT_EQ(msgs[0].bytes, 5u * 100 + 7);
    EXPECT_EQ(msgs[0].t_first_ns, 10u);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
}

// Held packets whose hole never fills belong to the open message when it is frozen (its
// psn_last is then the newest PSN observed); more than 8 held packets join at once.
TEST(EngineMessages, packets_past_a_hole_that_never_fills_join_the_message_at_freeze) {
    EngineHarness h;
    h.send(req(kSendFirst, 40, 1024), 100);
    h.send(req(kSendMiddle, 41, 1024), 110);
    h.send(req(kSendMiddle, 43, 1024), 120);  // 42 never observed
    h.send(req(kSendFirst, 60, 1024), 200);
    for (uint32_t psn = 62; psn <= 71; ++psn)  // 61 never observed; 10 packets past it
        h.send(req(kSendMiddle, psn, 1024), 200 + psn);
    h.finish(1000);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].psn_first, 40u);
    EXPECT_EQ(msgs[0].psn_last, 43u);
    EXPECT_EQ(msgs[0].pkts, 3u);
    EXPECT_EQ(msgs[0].t_last_ns, 120u);
    EXPECT_EQ(msgs[0].status, MsgStatus::incomplete);
    EXPECT_EQ(msgs[1].psn_first, 60u);
    EXPECT_EQ(msgs[1].psn_last, 71u);
    EXPECT_EQ(msgs[1].pkts, 11u);
    EXPECT_EQ(msgs[1].bytes, 11u * 1024);
    EXPECT_EQ(msgs[1].t_last_ns, 271u);
    EXPECT_EQ(h.engine->counters().orphans_dropped.load(), 0u);
}

TEST(EngineMessages, coalesced_ack_completes_every_earlier_message) {
    EngineHarness h;
    h.send(req(kSendOnly, 1, 8), 10);
    h.send(req(kWriteOnly, 2, 8), 20);
    h.send(req(kSendOnly, 3, 8), 30);
    h.send(resp(kAck, 2, kOk), 50);
    h.finish(100);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(msgs[0].psn_first, 1u);
    EXPECT_EQ(msgs[0].t_ack_ns, 50u);
    EXPECT_EQ(msgs[1].psn_first, 2u);
    EXPECT_EQ(msgs[1].t_ack_ns, 50u);
    EXPECT_EQ(msgs[2].psn_first, 3u);  // frozen at the end, never acknowledged
    EXPECT_FALSE(msgs[2].has_ack);
    EXPECT_EQ(msgs[2].status, MsgStatus::incomplete);
}

TEST(EngineMessages, read_range_comes_from_its_last_response_and_completes_it) {
    EngineHarness h;
    Pkt r = req(kReadRequest, 50);
    r.va = 0x2000;
    r.rkey = 7;
    r.dma_len = 2500;
    h.send(r, 100);
    h.send(resp(kReadResponseFirst, 50, kOk, 1024), 200);
    h.send(resp(kReadResponseMiddle, 51, 0, 1024), 210);
    h.send(resp(kReadResponseMiddle, 51, 0, 1024), 215);  // duplicate response
    h.send(resp(kReadResponseLast, 52, kOk, 452), 220);
    h.send(req(kSendOnly, 53, 4), 300);  // right after the READ's range: no gap
    h.send(resp(kAck, 53, kOk), 350);
    h.finish(400);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    const auto& m = msgs[0];
    EXPECT_EQ(m.op, MsgOp::read);
    EXPECT_EQ(m.psn_first, 50u);
    EXPECT_EQ(m.psn_last, 52u);
    EXPECT_EQ(m.pkts, 3u);
    EXPECT_EQ(m.bytes, 2500u);
    EXPECT_EQ(m.va, 0x2000u);
    EXPECT_EQ(m.rkey, 7u);
    EXPECT_EQ(m.dma_len, 2500u);
    EXPECT_EQ(m.t_first_ns, 100u);
    EXPECT_EQ(m.t_last_ns, 220u);
    EXPECT_EQ(m.t_ack_ns, 220u);
    EXPECT_EQ(m.status, MsgStatus::ok);
    EXPECT_EQ(h.qp(kB, kQb).gaps, 0u);
}

TEST(EngineMessages, read_without_responses_opens_no_gap_and_ends_before_next_request) {
    EngineHarness h;
    h.send(req(kReadRequest, 10), 1);
    h.send(req(kWriteOnly, 14, 4), 2);
    h.finish(3);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].op, MsgOp::read);
    EXPECT_EQ(msgs[0].psn_last, 13u);
    EXPECT_EQ(msgs[0].pkts, 0u);
    EXPECT_EQ(h.qp(kB, kQb).gaps, 0u);
}

TEST(EngineMessages, request_beyond_read_range_counts_the_gap_after_its_last_response) {
    EngineHarness h;
    h.send(req(kReadRequest, 10), 1);
    h.send(resp(kReadResponseOnly, 10, kOk, 16), 2);
    h.send(req(kSendOnly, 13, 4), 3);  // 11 and 12 missing
    h.finish(4);
    const auto qb = h.qp(kB, kQb);
    EXPECT_EQ(qb.gaps, 1u);
    EXPECT_EQ(qb.missing, 2u);
    const auto gaps = h.events(state::EventKind::gap);
    ASSERT_EQ(gaps.size(), 1u);
    EXPECT_EQ(gaps[0].psn, 13u);
    EXPECT_EQ(gaps[0].missing, 2u);
}

TEST(EngineMessages, seq_nak_before_lost_first_counts_in_the_retransmitted_message) {
    EngineHarness h;
    // PSN 5 is lost before the observer; 6 is seen, the responder NAKs 5, the requester
    // goes back to 5 and resends 5 and 6.
    h.send(req(kSendOnly, 6, 4), 10);
    h.send(resp(kAck, 5, proto::aeth_nak(proto::NakCode::psn_seq_error)), 20);
    h.send(req(kSendOnly, 5, 4), 30);
    h.send(req(kSendOnly, 6, 4), 40);
    h.send(resp(kAck, 6, kOk), 50);
    h.finish(60);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    const auto& m5 = msgs[0].psn_first == 5 ? msgs[0] : msgs[1];
    const auto& m6 = msgs[0].psn_first == 6 ? msgs[0] : msgs[1];
    EXPECT_EQ(m5.naks, 1u);
    EXPECT_EQ(m5.retx_pkts, 0u);
    EXPECT_EQ(m5.t_first_ns, 30u);
    EXPECT_EQ(m5.t_ack_ns, 50u);
    EXPECT_EQ(m5.status, MsgStatus::ok);
    EXPECT_EQ(m6.naks, 0u);
    EXPECT_EQ(m6.retx_pkts, 1u);
    EXPECT_EQ(m6.pkts, 1u);
    EXPECT_EQ(m6.t_first_ns, 10u);
    EXPECT_EQ(m6.t_last_ns, 40u);
    const auto qb = h.qp(kB, kQb);
    EXPECT_EQ(qb.ooo_pkts, 1u);  // 5 after 6
    EXPECT_EQ(qb.dup_pkts, 1u);  // 6 again
    EXPECT_EQ(h.qp(kA, kQa).naks.seq, 1u);
}

TEST(EngineMessages, fatal_nak_freezes_the_message_without_completion) {
    EngineHarness h;
    h.send(req(kWriteOnly, 7, 4), 10);
    h.send(resp(kAck, 7, proto::aeth_nak(proto::NakCode::remote_access)), 20);
    h.send(req(kWriteOnly, 7, 4), 30);  // a late duplicate: only the endpoint counts it
    h.finish(40);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].status, MsgStatus::nak_access);
    EXPECT_FALSE(msgs[0].has_ack);
    EXPECT_EQ(msgs[0].naks, 1u);
    EXPECT_EQ(msgs[0].retx_pkts, 0u);
    EXPECT_EQ(msgs[0].t_last_ns, 10u);
    EXPECT_EQ(h.qp(kB, kQb).dup_pkts, 1u);
    EXPECT_EQ(h.qp(kA, kQa).naks.access, 1u);
    EXPECT_EQ(h.events(state::EventKind::fatal_nak).size(), 1u);
}

TEST(EngineMessages, rnr_nak_then_retry_completes_with_rnr_count) {
    EngineHarness h;
    h.send(req(kSendOnly, 9, 4), 10);
    h.send(resp(kAck, 9, proto::aeth_rnr_nak(3)), 20);
    h.send(req(kSendOnly, 9, 4), 30);
    h.send(resp(kAck, 9, kOk), 40);
    h.finish(50);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].rnr_naks, 1u);
    EXPECT_EQ(msgs[0].naks, 0u);
    EXPECT_EQ(msgs[0].retx_pkts, 1u);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
    EXPECT_EQ(msgs[0].t_ack_ns, 40u);
    EXPECT_EQ(h.qp(kA, kQa).naks.rnr, 1u);
}

TEST(EngineMessages, never_completed_message_reports_its_latest_nak_kind) {
    EngineHarness h;
    h.send(req(kSendOnly, 9, 4), 10);
    h.send(resp(kAck, 9, proto::aeth_rnr_nak(3)), 20);
    h.finish(50);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].status, MsgStatus::nak_rnr);
}

TEST(EngineMessages, psn_wrap_is_seamless) {
    EngineHarness h;
    h.send(req(kWriteFirst, 0xFFFFFE, 256), 1);
    h.send(req(kWriteMiddle, 0xFFFFFF, 256), 2);
    h.send(req(kWriteLast, 0, 10), 3);
    h.send(req(kSendOnly, 1, 4), 4);
    h.send(resp(kAck, 1, kOk), 5);
    h.finish(6);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].psn_first, 0xFFFFFEu);
    EXPECT_EQ(msgs[0].psn_last, 0u);
    EXPECT_EQ(msgs[0].pkts, 3u);
    EXPECT_EQ(msgs[0].bytes, 522u);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
    EXPECT_EQ(msgs[1].psn_first, 1u);
    EXPECT_EQ(h.qp(kB, kQb).gaps, 0u);
}

TEST(EngineMessages, uc_message_is_ok_once_all_packets_were_seen) {
    EngineHarness h;
    h.send(req(kUcBase + kWriteFirst, 20, 256), 1);
    h.send(req(kUcBase + kWriteLast, 22, 5), 2);
    h.send(req(kUcBase + kWriteMiddle, 21, 256), 3);
    const auto msgs = h.msgs();  // frozen before the end of input
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
    EXPECT_FALSE(msgs[0].has_ack);
    EXPECT_EQ(msgs[0].pkts, 3u);
    EXPECT_EQ(msgs[0].psn_last, 22u);
    h.finish(4);
    EXPECT_EQ(h.qp(kB, kQb).transport, state::TransportFamily::uc);
}

// A UC SEND whose Last was lost stays open while the messages after it complete on their
// own and leave; at its freeze the packets held for a later message whose First was lost
// (a SEND too, so the op does not tell them apart) are not its: the next First it saw
// bounds its range. Before, with no open message after it any more, they joined it
// (insert-gen sweep scenario with UC connections, seeds 25 and 48).
TEST(EngineMessages, uc_send_with_lost_last_keeps_out_packets_past_a_later_first) {
    EngineHarness h;
    h.send(req(kUcBase + kSendFirst, 725, 2048), 1);
    // 726, its Last, lost.
    h.send(req(kUcBase + kWriteOnly, 727, 100), 2);  // complete at once
    // 728, the next SEND's First, lost.
    h.send(req(kUcBase + kSendMiddle, 729, 2048), 3);
    h.send(req(kUcBase + kSendLast, 730, 19), 4);
    h.finish(10);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].op, MsgOp::write);
    EXPECT_EQ(msgs[0].status, MsgStatus::ok);
    EXPECT_EQ(msgs[1].op, MsgOp::send);
    EXPECT_EQ(msgs[1].psn_first, 725u);
    EXPECT_EQ(msgs[1].psn_last, 725u);
    EXPECT_EQ(msgs[1].pkts, 1u);
    EXPECT_EQ(msgs[1].bytes, 2048u);
    EXPECT_EQ(msgs[1].t_last_ns, 1u);
    EXPECT_EQ(msgs[1].status, MsgStatus::incomplete);
}

TEST(EngineMessages, atomic_completes_on_atomic_ack) {
    EngineHarness h;
    Pkt a = req(kFetchAdd, 30);
    a.va = 0x3000;
    a.rkey = 9;
    h.send(a, 10);
    h.send(resp(kAtomicAck, 30, kOk), 25);
    h.finish(30);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].op, MsgOp::fetch_add);
    EXPECT_EQ(msgs[0].va, 0x3000u);
    EXPECT_EQ(msgs[0].rkey, 9u);
    EXPECT_FALSE(msgs[0].has_dma_len);
    EXPECT_EQ(msgs[0].pkts, 1u);
    EXPECT_EQ(msgs[0].bytes, 0u);
    EXPECT_EQ(msgs[0].t_ack_ns, 25u);
}

TEST(EngineMessages, responses_before_pairing_complete_nothing_without_a_peer) {
    // Two requesters at A talk to two responders at B from one source port: neither the
    // sport nor the ip rule can pair, so responses cannot complete anything.
    EngineHarness h;
    h.send(Pkt{kA, kB, kSendOnly, 0x22, 1, 4}, 1);
    h.send(Pkt{kA, kB, kSendOnly, 0x23, 1, 4}, 2);
    h.send(Pkt{kB, kA, kAck, 0x11, 1, 0, 49152, kOk}, 3);
    h.send(Pkt{kB, kA, kAck, 0x12, 1, 0, 49152, kOk}, 4);
    h.finish(5);
    for (const auto& m : h.msgs()) {
        EXPECT_FALSE(m.has_ack);
        EXPECT_FALSE(m.has_src_qpn);
    }
    EXPECT_EQ(h.events(state::EventKind::unknown_qp).size(), 2u);
    EXPECT_EQ(h.qp(kA, 0x11).pair_by, state::PairBy::none);
}

// docs/semantics.md "Messages": a message's origin is its opening packet's - the WRITE
// First's MAC, TTL and port, not those of its Middle and Last from elsewhere (a forger's
// continuation, a path change); a READ's is its request's, whatever its responses carry.
TEST(EngineMessages, origin_is_the_opening_packets) {
    EngineHarness h;
    const proto::MacAddress kFirstMac = {0x02, 0xaa, 0, 0, 0, 0x05};
    const proto::MacAddress kOtherMac = {0x02, 0xbb, 0, 0, 0, 0x09};
    Pkt first = req(kWriteFirst, 100, 1024);
    first.dma_len = 2048;
    first.src_mac = kFirstMac;
    first.ttl = 63;
    first.port = 1;
    Pkt last = req(kWriteLast, 101, 1024);
    last.src_mac = kOtherMac;
    last.ttl = 250;
    last.port = 0;
    h.send(first, 1'000);
    h.send(last, 1'100);
    h.send(resp(kAck, 101, kOk), 2'000);
    Pkt read = req(kReadRequest, 102);
    read.dma_len = 64;
    read.ttl = 17;  // MAC the harness's, port none (a replay)
    h.send(read, 3'000);
    Pkt response = resp(kReadResponseOnly, 102, kOk, 64);
    response.src_mac = kOtherMac;
    response.ttl = 1;
    response.port = 0;
    h.send(response, 3'500);
    h.finish(10'000);
    const auto msgs = h.msgs();
    ASSERT_EQ(msgs.size(), 2u);
    EXPECT_EQ(msgs[0].op, MsgOp::write);
    EXPECT_EQ(msgs[0].origin.src_mac, kFirstMac);
    EXPECT_EQ(msgs[0].origin.ttl, 63u);
    EXPECT_EQ(msgs[0].port, 1u);
    EXPECT_EQ(msgs[1].op, MsgOp::read);
    EXPECT_EQ(msgs[1].origin.src_mac, (proto::MacAddress{0x02, 0, 0, 0, 0, 0x01}));
    EXPECT_EQ(msgs[1].origin.ttl, 17u);
    EXPECT_EQ(msgs[1].port, proto::kNoPort);
}

}  // namespace
}  // namespace insert::test
