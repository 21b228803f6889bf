// Each reliability mechanism of insert-gen on a hand-checkable case, with the exact truth
// derived by hand from SPEC.md sections 4-5 and docs/semantics.md.
//
// Common set-up: hosts A = 10.0.0.1 (QP 256, requester) and B = 10.0.0.2 (QP 512),
// one RC connection, path MTU 1024, first PSN 100, link 8 Gb/s so that a frame of L bytes
// takes L + 20 ns on the wire (preamble + IFG), 100 ns to the observer and 100 ns from it
// to the receiver. Responder: ACK coalescing window 1000 ns, NAKs after 50 ns, READ
// responses after 1500 ns; requester timeout 100 us, RNR wait 20 us. IPv4 frame sizes:
// 58 B + extension headers + payload (Eth 14, IP 20, UDP 8, BTH 12, ICRC 4), so
//   WRITE First/Only 1024 B: 58 + 16 + 1024 = 1098 B -> 1118 ns;  WRITE Middle/Last 1024 B:
//   1082 B -> 1102 ns;  WRITE Only 1000 B: 1074 B -> 1094 ns;  SEND Only 1000 B: 1058 B ->
//   1078 ns;  ACK/NAK: 62 B -> 82 ns;  READ request: 74 B -> 94 ns;  READ response First/
//   Last 1024 B (AETH): 1086 B -> 1106 ns.
// An observed time is (end of serialization) + 100; a delivery is observed time + 100.
// All times below are offsets from kEpochNs.
#include <gtest/gtest.h>

#include "bench/gen/generator.hpp"

namespace insert::gen {
namespace {

constexpr uint16_t kA = 0, kB = 1;
constexpr uint32_t kQpA = 256, kQpB = 512;

Scenario base() {
    Scenario s;
    s.name = "unit";
    s.rate_gbps = 8;
    s.prop_pre_ns = 100;
    s.prop_post_ns = 100;
    s.timing.ack_delay_ns = 1000;
    s.timing.responder_delay_ns = 50;
    s.timing.read_delay_ns = 1500;
    s.timing.retx_timeout_ns = 100'000;
    s.timing.rnr_timer_ns = 20'000;
    s.hosts = {{*proto::IpAddress::parse("10.0.0.1"), {}},
               {*proto::IpAddress::parse("10.0.0.2"), {}}};
    ConnSpec c;
    c.a = 0;
    c.b = 1;
    c.mtu = 1024;
    c.qpn_a = kQpA;
    c.qpn_b = kQpB;
    c.psn_a = 100;
    c.psn_b = 5000;
    s.conns = {c};
    return s;
}

void add(Scenario& s, OpType op, uint32_t len, uint64_t at_ns) {
    s.messages.push_back({0, op, len, at_ns, false, false});
}

std::unique_ptr<Generation> run(const Scenario& s) {
    EXPECT_EQ(validate(s), "");
    auto g = std::make_unique<Generation>(s, 1);
    std::string error;
    EXPECT_TRUE(g->run("", error)) << error;
    return g;
}

const TruthEndpoint& ep(const Generation& g, uint16_t host, uint32_t qpn) {
    const int32_t i = g.truth().find(host, qpn);
    EXPECT_GE(i, 0);
    return g.truth().endpoints().at(static_cast<std::size_t>(i));
}

std::vector<uint64_t> latencies(const Generation& g, uint16_t host, uint32_t qpn) {
    const std::span<const uint64_t> l =
        g.truth().latencies(static_cast<std::size_t>(g.truth().find(host, qpn)));
    return {l.begin(), l.end()};
}

uint64_t t(uint64_t offset) {
    return kEpochNs + offset;
}

// Fields every test checks the same way.
void expect_msg(const TruthMsg& m, uint32_t psn_first, uint32_t psn_last, uint32_t pkts,
                uint64_t bytes, uint64_t t_first, uint64_t t_last, std::optional<uint64_t> t_ack,
                uint32_t retx, uint32_t naks, uint32_t rnr_naks, TruthStatus status) {
    EXPECT_EQ(m.src_host, kA);
    EXPECT_EQ(m.dst_host, kB);
    EXPECT_EQ(m.dst_qpn, kQpB);
    EXPECT_EQ(m.src_qpn, std::optional<uint32_t>(kQpA));
    EXPECT_EQ(m.psn_first, psn_first);
    EXPECT_EQ(m.psn_last, psn_last);
    EXPECT_EQ(m.pkts, pkts);
    EXPECT_EQ(m.bytes, bytes);
    EXPECT_EQ(m.t_first_ns, t(t_first));
    EXPECT_EQ(m.t_last_ns, t(t_last));
    EXPECT_EQ(m.t_ack_ns, t_ack ? std::optional<uint64_t>(t(*t_ack)) : std::nullopt);
    EXPECT_EQ(m.retx_pkts, retx);
    EXPECT_EQ(m.naks, naks);
    EXPECT_EQ(m.rnr_naks, rnr_naks);
    EXPECT_EQ(m.status, status);
}

// Posted at 1000. Observed: First 1000+1118+100 = 2218, Middle 3220+100 = 3320, Last
// 4322+100 = 4422. The Last (AckReq) reaches B at 4522; the coalesced ACK leaves at 5522,
// ends 5604, observed 5704. PSNs 0xFFFFFE, 0xFFFFFF, 0 wrap (SPEC 2).
TEST(GenReliability, clean_write_across_psn_wrap_is_acked_once) {
    Scenario s = base();
    s.conns[0].psn_a = 0xFFFFFE;
    add(s, OpType::write, 3072, 1000);
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    const TruthMsg& m = g->truth().msgs()[0];
    expect_msg(m, 0xFFFFFE, 0, 3, 3072, 2218, 4422, 5704, 0, 0, 0, TruthStatus::ok);
    EXPECT_EQ(m.op, OpType::write);
    EXPECT_EQ(m.va, g->sim().messages()[0].va);
    EXPECT_EQ(m.dma_len, std::optional<uint32_t>(3072));
    EXPECT_FALSE(m.imm);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.pkts, 3u);
    EXPECT_EQ(b.bytes, 3072u);
    EXPECT_EQ(b.gaps, 0u);
    EXPECT_EQ(b.msgs[1], 1u);
    EXPECT_EQ(latencies(*g, kB, kQpB), std::vector<uint64_t>{5704 - 2218});
    const TruthEndpoint& a = ep(*g, kA, kQpA);
    EXPECT_EQ(a.pkts, 1u);  // the ACK
    EXPECT_EQ(a.bytes, 0u);
    EXPECT_EQ(a.pair_by, PairRule::sport);  // symmetric source port, one connection
    EXPECT_EQ(b.pair_by, PairRule::sport);
    EXPECT_EQ(g->truth().summary().connections, 1u);
    EXPECT_EQ(g->truth().summary().endpoints, 2u);
}

// More messages outstanding than the 16 that fit inline: 20 SENDs posted at once, the
// responder's coalesced ACK only after 100 us. semantics.md caps outstanding messages at 256
// (as the dataplane does), so none is frozen early: one ACK completes all 20.
TEST(GenReliability, twenty_outstanding_messages_complete_on_one_ack) {
    Scenario s = base();
    s.timing.ack_delay_ns = 100'000;
    s.timing.retx_timeout_ns = 1'000'000;
    for (int i = 0; i < 20; ++i) add(s, OpType::send, 64, 1000);
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 20u);
    const std::optional<uint64_t> ack = g->truth().msgs()[0].t_ack_ns;
    ASSERT_TRUE(ack.has_value());
    for (uint32_t i = 0; i < 20; ++i) {
        const TruthMsg& m = g->truth().msgs()[i];
        EXPECT_EQ(m.psn_first, 100 + i);
        EXPECT_EQ(m.status, TruthStatus::ok) << "message " << i;
        EXPECT_EQ(m.t_ack_ns, ack) << "message " << i;
    }
    EXPECT_EQ(g->truth().msgs_overflow(), 0u);
    EXPECT_EQ(ep(*g, kB, kQpB).msgs[0], 20u);
}

// The Middle (PSN 101) is lost before the observer. The Last (102, observed 4422) reaches B
// at 4522 out of sequence: NAK(seq, PSN 101) at 4572, ends 4654, observed 4754, reaches A at
// 4854, which goes back to 101: Middle' observed 4854+1102+100 = 6056, Last' 7158. B ACKs
// the Last' (arrived 7258) at 8258: observed 8440.
// Observer: 100 new, 102 new -> gap (missing 1), 101 late, 102 dup (retx of the message).
TEST(GenReliability, loss_before_observer_is_a_gap_then_a_late_packet) {
    Scenario s = base();
    add(s, OpType::write, 3072, 1000);
    s.imp.targets.push_back({Action::drop_before, 0, 0, 1, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    expect_msg(g->truth().msgs()[0], 100, 102, 3, 3072, 2218, 7158, 8440, 1, 1, 0, TruthStatus::ok);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.pkts, 4u);
    EXPECT_EQ(b.bytes, 4096u);
    EXPECT_EQ(b.gaps, 1u);
    EXPECT_EQ(b.missing, 1u);
    EXPECT_EQ(b.ooo_pkts, 1u);
    EXPECT_EQ(b.dup_pkts, 1u);
    const TruthEndpoint& a = ep(*g, kA, kQpA);
    EXPECT_EQ(a.naks.seq, 1u);
    EXPECT_EQ(a.pkts, 2u);
    EXPECT_EQ(a.t_first_ns, t(4754));
    EXPECT_EQ(a.t_last_ns, t(8440));
}

// The Middle is lost after the observer: all three first transmissions are observed, then
// the same NAK and go-back-N as above: Middle' and Last' are duplicates.
TEST(GenReliability, loss_after_observer_shows_as_duplicates) {
    Scenario s = base();
    add(s, OpType::write, 3072, 1000);
    s.imp.targets.push_back({Action::drop_after, 0, 0, 1, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    expect_msg(g->truth().msgs()[0], 100, 102, 3, 3072, 2218, 7158, 8440, 2, 1, 0, TruthStatus::ok);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.pkts, 5u);
    EXPECT_EQ(b.bytes, 5120u);
    EXPECT_EQ(b.gaps, 0u);
    EXPECT_EQ(b.ooo_pkts, 0u);
    EXPECT_EQ(b.dup_pkts, 2u);
}

// The Last (AckReq) is lost before the observer: B never ACKs, A times out 100 us after the
// post (at 101000) and resends all three: observed 102218, 103320, 104422. The first two
// are duplicates at B (silently dropped), the Last' is new (no gap: 102 = max + 1); B ACKs
// it at 104522 + 1000: observed 105704.
TEST(GenReliability, lost_last_packet_times_out_and_resends_the_message) {
    Scenario s = base();
    add(s, OpType::write, 3072, 1000);
    s.imp.targets.push_back({Action::drop_before, 0, 0, 2, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    expect_msg(g->truth().msgs()[0], 100, 102, 3, 3072, 2218, 104422, 105704, 2, 0, 0,
               TruthStatus::ok);
    EXPECT_EQ(g->sim().stats().timeouts, 1u);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.pkts, 5u);
    EXPECT_EQ(b.dup_pkts, 2u);
    EXPECT_EQ(b.gaps, 0u);
    EXPECT_EQ(b.ooo_pkts, 0u);
}

// SEND Only of 1000 B meets no receive buffer once: observed 2178, reaches B at 2278, RNR
// NAK (PSN 100) at 2328, observed 2510, reaches A at 2610; A waits 20 us and resends at
// 22610: observed 22610+1078+100 = 23788 (a dup), ACKed at 23888+1000: observed 25070.
TEST(GenReliability, rnr_nak_then_retry_completes) {
    Scenario s = base();
    add(s, OpType::send, 1000, 1000);
    s.imp.targets.push_back({Action::rnr, 0, 0, 0, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    const TruthMsg& m = g->truth().msgs()[0];
    expect_msg(m, 100, 100, 1, 1000, 2178, 23788, 25070, 1, 0, 1, TruthStatus::ok);
    EXPECT_EQ(m.op, OpType::send);
    EXPECT_FALSE(m.va);
    EXPECT_FALSE(m.dma_len);
    EXPECT_EQ(ep(*g, kA, kQpA).naks.rnr, 1u);
    EXPECT_EQ(ep(*g, kB, kQpB).dup_pkts, 1u);
}

// Two-packet WRITE whose First is overtaken by its Last at the observer: the Last would be
// observed at 3320 and releases the held First at the same instant. Both reach B at 3420,
// the Last first: NAK(seq, 100) at 3470, observed 3652; then the First is accepted. A goes
// back to 100 at 3752: First' observed 4970 (dup), Last' 6072 (dup); ACK observed 7354.
// Observer: 101 is the direction's first packet (no gap), 100 is late.
TEST(GenReliability, adjacent_swap_is_late_not_a_gap) {
    Scenario s = base();
    add(s, OpType::write, 2048, 1000);
    s.imp.targets.push_back({Action::swap, 0, 0, 0, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    expect_msg(g->truth().msgs()[0], 100, 101, 2, 2048, 3320, 6072, 7354, 2, 1, 0, TruthStatus::ok);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.ooo_pkts, 1u);
    EXPECT_EQ(b.dup_pkts, 2u);
    EXPECT_EQ(b.gaps, 0u);
    EXPECT_EQ(b.missing, 0u);
}

// WRITE Only (bad R_Key) observed 2194; NAK remote access (PSN 100) observed 2526 freezes it
// (no completion). The next WRITE, posted at 1500, left at 2094 and is observed at 3288,
// after the NAK: B, now in error, drops it and A, in error, never resends it: incomplete.
// A third WRITE posted after the NAK arrived is flushed, never sent.
TEST(GenReliability, fatal_nak_freezes_the_message_and_stops_the_qp) {
    Scenario s = base();
    add(s, OpType::write, 1000, 1000);
    add(s, OpType::write, 1000, 1500);
    add(s, OpType::write, 1000, 50'000);
    s.imp.targets.push_back({Action::access_error, 0, 0, 0, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 2u);
    expect_msg(g->truth().msgs()[0], 100, 100, 1, 1000, 2194, 2194, std::nullopt, 0, 1, 0,
               TruthStatus::nak_access);
    expect_msg(g->truth().msgs()[1], 101, 101, 1, 1000, 3288, 3288, std::nullopt, 0, 0, 0,
               TruthStatus::incomplete);
    EXPECT_EQ(ep(*g, kA, kQpA).naks.access, 1u);
    EXPECT_EQ(ep(*g, kB, kQpB).pkts, 2u);
    EXPECT_TRUE(latencies(*g, kB, kQpB).empty());
}

// Two WRITE Only (1000 B) posted together; the first is lost before the observer. The second
// (PSN 101, observed 3288) makes B NAK PSN 100 (observed 3620) before PSN 100 was ever
// observed. A resends both: 100 observed 4914 (late), 101 at 6008 (dup). B's coalescing
// timer started by 100' (arrived 5014) fires at 6014 before 101' arrives (6108): ACK 100
// observed 6196, then ACK 101 observed 7290.
TEST(GenReliability, nak_seen_before_the_first_packet_counts_for_the_message) {
    Scenario s = base();
    add(s, OpType::write, 1000, 1000);
    add(s, OpType::write, 1000, 1000);
    s.imp.targets.push_back({Action::drop_before, 0, 0, 0, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 2u);
    expect_msg(g->truth().msgs()[0], 100, 100, 1, 1000, 4914, 4914, 6196, 0, 1, 0, TruthStatus::ok);
    expect_msg(g->truth().msgs()[1], 101, 101, 1, 1000, 3288, 6008, 7290, 1, 0, 0, TruthStatus::ok);
    const TruthEndpoint& b = ep(*g, kB, kQpB);
    EXPECT_EQ(b.ooo_pkts, 1u);
    EXPECT_EQ(b.dup_pkts, 1u);
    EXPECT_EQ(b.gaps, 0u);  // the direction's first packet never opens a gap
}

// READ of 2048 B: request observed 1000+94+100 = 1194, B answers after 1500 ns: responses
// observed 2794+1106+100 = 4000 and 5106; the Last completes the READ (psn_last 101). A
// WRITE Only posted at 10000 takes PSN 102: no gap after a READ whose Last response was seen.
TEST(GenReliability, read_spans_its_response_psns) {
    Scenario s = base();
    add(s, OpType::read, 2048, 1000);
    add(s, OpType::write, 1000, 10'000);
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 2u);
    const TruthMsg& r = g->truth().msgs()[0];
    expect_msg(r, 100, 101, 2, 2048, 1194, 5106, 5106, 0, 0, 0, TruthStatus::ok);
    EXPECT_EQ(r.op, OpType::read);
    EXPECT_EQ(r.dma_len, std::optional<uint32_t>(2048));
    // WRITE: observed 10000+1094+100 = 11194, ACK at 11294+1000, observed 12476.
    expect_msg(g->truth().msgs()[1], 102, 102, 1, 1000, 11194, 11194, 12476, 0, 0, 0,
               TruthStatus::ok);
    EXPECT_EQ(ep(*g, kB, kQpB).gaps, 0u);
    EXPECT_EQ(ep(*g, kA, kQpA).pkts, 3u);
    EXPECT_EQ(ep(*g, kA, kQpA).bytes, 2048u);
}

// Pairing sources (SPEC 3): an observed CM exchange wins; per-QP source ports defeat the
// sport rule and leave the ip rule; two such connections between the same hosts stay unpaired.
TEST(GenReliability, pairing_follows_cm_then_sport_then_ip) {
    Scenario s = base();
    s.conns[0].cm = true;
    add(s, OpType::write, 100, 200'000);
    auto g = run(s);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::cm);
    EXPECT_EQ(ep(*g, kB, kQpB).peer, g->truth().find(kA, kQpA));

    Scenario p = base();
    p.sport_policy = SportPolicy::per_qp;
    add(p, OpType::write, 100, 1000);
    g = run(p);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::ip);

    ConnSpec second = p.conns[0];
    second.qpn_a = 300;
    second.qpn_b = 600;
    p.conns.push_back(second);
    p.messages.push_back({1, OpType::write, 100, 1000, false, false});
    g = run(p);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::none);
    EXPECT_EQ(g->truth().summary().connections, 0u);
    EXPECT_EQ(g->truth().msgs()[0].src_qpn, std::nullopt);
    EXPECT_EQ(g->truth().msgs()[0].status, TruthStatus::incomplete);  // completion needs the pair
    // The ACKs (PSN 100, to A:256 and A:300) fall in both responders' request windows
    // (PSN 100 each): the psn rule finds two candidates and does not decide (semantics.md).
    EXPECT_EQ(ep(*g, kA, 300).pair_by, PairRule::none);
}

// semantics.md `psn`: the same two connections, the second starting at PSN 3000. The ACK of
// PSN 100 to A:256 lies in B:512's window (100 - 1024, 100] only, not in B:600's
// (3000 - 1024, 3000]; the ACK of PSN 3000 to A:300 then has one unpaired candidate left.
TEST(GenReliability, psn_rule_pairs_by_the_outstanding_request_window) {
    Scenario p = base();
    p.sport_policy = SportPolicy::per_qp;
    ConnSpec second = p.conns[0];
    second.qpn_a = 300;
    second.qpn_b = 600;
    second.psn_a = 3000;
    p.conns.push_back(second);
    add(p, OpType::write, 100, 1000);
    p.messages.push_back({1, OpType::write, 100, 1000, false, false});
    const auto g = run(p);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::psn);
    EXPECT_EQ(ep(*g, kA, kQpA).peer, g->truth().find(kB, kQpB));
    EXPECT_EQ(ep(*g, kA, 300).pair_by, PairRule::psn);
    EXPECT_EQ(ep(*g, kA, 300).peer, g->truth().find(kB, 600));
    EXPECT_EQ(g->truth().summary().connections, 2u);
    for (const TruthMsg& m : g->truth().msgs()) EXPECT_EQ(m.status, TruthStatus::ok);
}

// semantics.md: sport/ip/psn pair a requester with its responder. Connection 0 goes A -> B,
// connection 1 B -> A (requester B:600, responder A:300), per-QP source ports. When A:300
// receives its first request, it and B:512 are "the only endpoints" receiving from the
// other host, but both are responders (no response received yet): no pair. The ACK to
// A:256 then makes two endpoints at A receive from B, so ip no longer applies; the psn rule
// pairs A:256 with B:512 (B:600 has received no request, so has no outstanding range).
TEST(GenReliability, two_responders_are_never_paired) {
    Scenario p = base();
    p.sport_policy = SportPolicy::per_qp;
    ConnSpec back = p.conns[0];
    back.a = kB;
    back.b = kA;
    back.qpn_a = 600;
    back.qpn_b = 300;
    back.psn_a = 7000;
    p.conns.push_back(back);
    add(p, OpType::write, 100, 1000);
    p.messages.push_back({1, OpType::write, 100, 1000, false, false});
    const auto g = run(p);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::psn);
    EXPECT_EQ(ep(*g, kA, kQpA).peer, g->truth().find(kB, kQpB));
    EXPECT_EQ(ep(*g, kB, 600).pair_by, PairRule::psn);
    EXPECT_EQ(ep(*g, kB, 600).peer, g->truth().find(kA, 300));
    EXPECT_EQ(g->truth().summary().connections, 2u);
}

// semantics.md "A READ completes only by its own Last/Only response", counted like any
// response whether or not its First/Only was. Two connections A -> B with per-QP source
// ports: READ 4096 B at PSN 1000 on connection 0 (B:512), WRITE Only 100 B at PSN 1002 on
// connection 1 (B:600, QPs 300/600), posted first so that it is done before the READ's
// responses. Neither sport nor ip decides (two endpoints at B receive from A); B:512's
// range is (1000 - 1024, 1000 + ceil(4096 / 256)] = up to 1016, B:600's up to 1002. The
// READ's responses 1000-1002 lie in both ranges, so A:256 stays unpaired and they count for
// nothing; the Last, 1003, lies in B:512's alone: it pairs A:256 by psn, counts (1 packet,
// 1024 B) and completes the READ - though its First was never counted for it.
// Times: the WRITE Only (174 B, 194 ns) leaves A at 100; its ACK (coalesced, 1000 ns) is
// on B's link at 1494-1576. The READ request (94 ns) leaves A at 1000, is observed at 1194
// and reaches B at 1294; the responses start 1500 ns later: First 2794-3900 (1106 ns),
// Middles 3900-5002 and 5002-6104 (1102 ns each), Last 6104-7210 (1106 ns), observed 100 ns
// after each ends: the Last at 7310.
TEST(GenReliability, read_last_response_completes_it_when_its_first_came_before_pairing) {
    Scenario p = base();
    p.sport_policy = SportPolicy::fixed;
    p.conns[0].psn_a = 1000;
    ConnSpec second = p.conns[0];
    second.qpn_a = 300;
    second.qpn_b = 600;
    second.psn_a = 1002;
    p.conns.push_back(second);
    p.messages.push_back({1, OpType::write, 100, 100, false, false});
    add(p, OpType::read, 4096, 1000);
    const auto g = run(p);
    EXPECT_EQ(ep(*g, kA, kQpA).pair_by, PairRule::psn);
    EXPECT_EQ(ep(*g, kA, kQpA).peer, g->truth().find(kB, kQpB));
    const TruthMsg* read_msg = nullptr;
    for (const TruthMsg& m : g->truth().msgs())
        if (m.op == OpType::read) read_msg = &m;
    ASSERT_NE(read_msg, nullptr);
    expect_msg(*read_msg, 1000, 1003, 1, 1024, 1194, 7310, 7310, 0, 0, 0, TruthStatus::ok);
}

// semantics.md "Messages": on UC nothing is retransmitted, so a hole holding one SEND's
// Last and the next SEND's First never fills, and at the end an observer cannot tell the
// later SEND's Middle and Last from the first SEND's own packets past the hole: the first
// SEND, frozen with its end unknown, takes them (its range ends at their Last), and the
// later SEND, whose First was never seen, has no record. Two 3072 B SENDs posted at 1000,
// PSNs 100-102 and 103-105, each packet 1082 B (1102 ns) back to back from 1000: observed
// 100 at 2202, 101 at 3304, (102 lost, 4306, and 103 lost, 5408,) 104 at 6610, 105 at 7712.
TEST(GenReliability, uc_send_at_freeze_takes_the_packets_held_past_its_hole) {
    Scenario s = base();
    s.conns[0].transport = ConnTransport::uc;
    add(s, OpType::send, 3072, 1000);
    add(s, OpType::send, 3072, 1000);
    s.imp.targets.push_back({Action::drop_before, 0, 0, 2, 1});
    s.imp.targets.push_back({Action::drop_before, 0, 1, 0, 1});
    const auto g = run(s);
    ASSERT_EQ(g->truth().msgs().size(), 1u);
    const TruthMsg& m = g->truth().msgs()[0];
    EXPECT_EQ(m.op, OpType::send);
    EXPECT_EQ(m.psn_first, 100u);
    EXPECT_EQ(m.psn_last, 105u);
    EXPECT_EQ(m.pkts, 4u);
    EXPECT_EQ(m.bytes, 4u * 1024);
    EXPECT_EQ(m.t_first_ns, t(2202));
    EXPECT_EQ(m.t_last_ns, t(7712));
    EXPECT_EQ(m.t_ack_ns, std::nullopt);
    EXPECT_EQ(m.status, TruthStatus::incomplete);
}

}  // namespace
}  // namespace insert::gen
