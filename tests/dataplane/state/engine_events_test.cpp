// docs/semantics.md "Events": every event kind but `pair` is counted per destination
// endpoint (ip, qpn), kind and one-second window of capture time, with its distinct
// sources, so that a spray from any number of spoofed sources to one QP gives one record a
// second per kind; the `qp` record's counters still count every packet.
#include <gtest/gtest.h>

#include <string>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;
using state::EventKind;

constexpr const char* kReq = "10.0.0.1";
constexpr const char* kResp = "10.0.0.2";
constexpr uint32_t kReqQp = 17, kRespQp = 34;
constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kT0 = 1'700'000'000 * kSecond;

// Source number i as an address of its own (10.64.0.0 + i).
std::string spoofed(uint32_t i) {
    return "10." + std::to_string(64 + (i >> 16)) + "." + std::to_string((i >> 8) & 0xFF) + "." +
           std::to_string(i & 0xFF);
}

state::EngineConfig roomy() {
    state::EngineConfig c = EngineHarness::small_config();
    c.max_endpoints = 1 << 16;  // a part for each sprayed source
    c.grow_tables = true;
    return c;
}

Pkt cnp(const std::string& from) {
    return Pkt{from, kReq, kCnp, kReqQp, 0, 0};
}

TEST(EngineEvents, a_cnp_storm_gives_one_window_per_second_with_its_count) {
    EngineHarness h;
    const uint64_t t0 = kT0 + 250;
    for (uint64_t i = 0; i < 1000; ++i) h.send(cnp(kResp), t0 + i * 1000);
    for (uint64_t i = 0; i < 3; ++i) h.send(cnp(kResp), t0 + 2 * kSecond + i);
    h.engine->close_windows(t0 + 4 * kSecond);  // a worker's time passes both
    auto events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].count, 1000u);
    EXPECT_EQ(events[0].t_ns, t0);
    EXPECT_EQ(events[0].t_last_ns, t0 + 999'000);
    EXPECT_EQ(events[0].window, kT0 / kSecond);
    EXPECT_EQ(events[0].sources.count(), 1u);
    EXPECT_TRUE(events[0].sources.exact());
    EXPECT_EQ(events[1].count, 3u);
    EXPECT_EQ(events[1].t_ns, t0 + 2 * kSecond);
    h.send(cnp(kResp), t0 + 5 * kSecond);
    h.finish(t0 + 5 * kSecond + 1);  // the end writes the window still open
    events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[2].count, 1u);
    EXPECT_EQ(h.qp(kReq, kReqQp).cnps, 1004u);
}

// The case, small: each CNP from a source of its own. Per source (the parts) it
// was one event per CNP; per destination it is one window a second.
TEST(EngineEvents, a_spray_from_spoofed_sources_is_one_window_a_second) {
    EngineHarness h(roomy());
    constexpr uint32_t kSources = 6000;
    for (uint32_t i = 0; i < kSources; ++i)  // 4000 in the first second, 2000 in the next
        h.send(cnp(spoofed(i)), kT0 + 600'000'000 + i * 100'000);
    h.finish(kT0 + 3 * kSecond);
    const auto events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].count + events[1].count, kSources);
    for (const auto& e : events) {
        EXPECT_FALSE(e.sources.exact());
        // Every CNP from another source: the estimate within the stated 20% of the count.
        EXPECT_NEAR(static_cast<double>(e.sources.count()), e.count, 0.2 * e.count);
    }
    EXPECT_EQ(h.qp(kReq, kReqQp).cnps, kSources);
}

TEST(EngineEvents, sources_are_exact_up_to_twenty_and_an_estimate_after) {
    EngineHarness h(roomy());
    for (int round = 0; round < 3; ++round)
        for (uint32_t i = 0; i < 20; ++i) h.send(cnp(spoofed(i)), kT0 + round * 1000 + i);
    h.engine->close_windows(kT0 + kSecond);
    auto events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].count, 60u);
    EXPECT_EQ(events[0].sources.count(), 20u);  // the same 20 three times
    EXPECT_TRUE(events[0].sources.exact());
    for (uint32_t i = 0; i < 21; ++i) h.send(cnp(spoofed(i)), kT0 + kSecond + i);
    h.engine->close_windows(kT0 + 2 * kSecond);
    events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_FALSE(events[1].sources.exact());
    EXPECT_NEAR(static_cast<double>(events[1].sources.count()), 21, 0.2 * 21);
}

// Every kind whose number grows with the sources is windowed: NAKs, RNR NAKs and fatal
// NAKs (one per NAK packet), unknown_qp (one per unpaired part), gaps (one per hole of a
// part's sequence).
TEST(EngineEvents, naks_unknown_qps_and_gaps_from_many_sources_are_one_window_each) {
    EngineHarness h(roomy());
    constexpr uint32_t kSources = 300;
    uint64_t t = kT0 + 1000;
    for (uint32_t i = 0; i < kSources; ++i) {
        const std::string s = spoofed(i);
        Pkt nak{s, kReq, kAck, kReqQp, 100 + i, 0};
        nak.syndrome = proto::aeth_nak(proto::NakCode::psn_seq_error);
        h.send(nak, t++);
        Pkt rnr = nak;
        rnr.syndrome = proto::aeth_rnr_nak(3);
        h.send(rnr, t++);
        Pkt fatal = nak;
        fatal.syndrome = proto::aeth_nak(proto::NakCode::remote_access);
        h.send(fatal, t++);
        h.send(Pkt{s, kResp, kSendOnly, kRespQp, 10, 8}, t++);
        h.send(Pkt{s, kResp, kSendOnly, kRespQp, 14, 8}, t++);  // 11..13 missing
    }
    h.finish(t);
    for (const EventKind kind : {EventKind::nak, EventKind::rnr_nak, EventKind::fatal_nak}) {
        const auto e = h.events(kind);
        ASSERT_EQ(e.size(), 1u) << static_cast<int>(kind);
        EXPECT_EQ(e[0].count, kSources);
        EXPECT_EQ(e[0].psn, 100u);  // the first event's
        EXPECT_NEAR(static_cast<double>(e[0].sources.count()), kSources, 0.2 * kSources);
    }
    EXPECT_EQ(h.events(EventKind::fatal_nak)[0].syndrome,
              proto::aeth_nak(proto::NakCode::remote_access));
    const auto unknown = h.events(EventKind::unknown_qp);
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_EQ(unknown[0].count, kSources);  // once per part, as before windows
    const auto gaps = h.events(EventKind::gap);
    ASSERT_EQ(gaps.size(), 1u);
    EXPECT_EQ(gaps[0].count, kSources);
    EXPECT_EQ(gaps[0].missing, 3u * kSources);
    EXPECT_EQ(gaps[0].psn, 14u);
    const auto q = h.qp(kReq, kReqQp);
    EXPECT_EQ(q.naks.seq + q.naks.rnr + q.naks.access, 3u * kSources);
    EXPECT_EQ(h.qp(kResp, kRespQp).gaps, kSources);
}

// Windows are per destination: two QPs, two records; `pair` events stay one per pair.
TEST(EngineEvents, windows_are_per_destination_endpoint_and_kind) {
    EngineHarness h;
    h.send(Pkt{kResp, kReq, kCnp, 7, 0, 0}, kT0 + 1);
    h.send(Pkt{kResp, kReq, kCnp, 8, 0, 0}, kT0 + 2);
    h.send(Pkt{kResp, kReq, kCnp, 7, 0, 0}, kT0 + 3);
    h.finish(kT0 + 4);
    const auto events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 2u);
    for (const auto& e : events) EXPECT_EQ(e.count, e.qpn == 7 ? 2u : 1u);
}

// The first event is the earliest by (time, PSN, syndrome), not the first to arrive: that
// is what the exporter's merge of several workers' windows can agree on.
TEST(EngineEvents, the_first_event_is_the_earliest_not_the_first_to_arrive) {
    EngineHarness h;
    h.send(Pkt{kResp, kReq, kCnp, 7, 50, 0}, kT0 + 20);
    h.send(Pkt{"10.0.0.3", kReq, kCnp, 7, 9, 0}, kT0 + 10);  // a capture out of order
    h.send(Pkt{"10.0.0.4", kReq, kCnp, 7, 5, 0}, kT0 + 10);
    h.finish(kT0 + 30);
    const auto events = h.events(EventKind::cnp);
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].t_ns, kT0 + 10);
    EXPECT_EQ(events[0].psn, 5u);
    EXPECT_EQ(events[0].t_last_ns, kT0 + 20);
}

// close_windows() writes the windows that ended, then a mark, even with none open; the
// current second's windows stay open.
TEST(EngineEvents, close_windows_writes_ended_windows_and_a_mark) {
    EngineHarness h;
    h.send(cnp(kResp), kT0 + 5);
    h.engine->close_windows(kT0 + 900'000'000);  // the same second: only the mark
    ASSERT_EQ(h.sink.records.size(), 1u);
    ASSERT_EQ(h.sink.records[0].type, state::RecordType::mark);
    EXPECT_EQ(h.sink.records[0].mark.events, kT0 / kSecond);
    h.send(cnp(kResp), kT0 + kSecond + 5);  // (a worker closes before such a packet)
    h.engine->close_windows(kT0 + 2 * kSecond);
    ASSERT_EQ(h.sink.records.size(), 4u);
    EXPECT_EQ(h.sink.records[1].event.window, kT0 / kSecond);  // pushed by the later one
    EXPECT_EQ(h.sink.records[2].event.window, kT0 / kSecond + 1);
    ASSERT_EQ(h.sink.records[3].type, state::RecordType::mark);
    EXPECT_EQ(h.sink.records[3].mark.events, kT0 / kSecond + 2);
    h.engine->close_windows(kT0 + 2 * kSecond + 1);  // no second passed: nothing
    h.engine->close_windows(kT0 + 3 * kSecond);      // a mark with nothing open
    ASSERT_EQ(h.sink.records.size(), 5u);
    EXPECT_EQ(h.sink.records[4].type, state::RecordType::mark);
}

// Timeout windows close at ticks (every part idle by then is gone). An engine holding no
// part - a live worker that got no frame - closes them with the others: its mark must not
// hold back the exporter's merge of other workers' timeout windows.
TEST(EngineEvents, an_engine_without_parts_passes_timeout_windows_at_close) {
    state::EngineConfig cfg = EngineHarness::small_config();
    cfg.idle_timeout_ns = kSecond;
    EngineHarness empty(cfg), busy(cfg);
    busy.send(Pkt{kReq, kResp, kSendFirst, kRespQp, 1, 8}, kT0 + 5);
    for (EngineHarness* h : {&empty, &busy}) h->engine->close_windows(kT0 + 3 * kSecond);
    ASSERT_EQ(empty.sink.records.back().type, state::RecordType::mark);
    EXPECT_EQ(empty.sink.records.back().mark.timeouts, kT0 / kSecond + 3);
    ASSERT_EQ(busy.sink.records.back().type, state::RecordType::mark);
    EXPECT_EQ(busy.sink.records.back().mark.events, kT0 / kSecond + 3);
    EXPECT_EQ(busy.sink.records.back().mark.timeouts, 0u);  // its part may still time out
}

// The table of open windows holds a sixteenth of the endpoints (64 at least): an event that
// finds it full is written as a window of its own and counted.
TEST(EngineEvents, a_full_window_table_writes_events_on_their_own) {
    EngineHarness h;  // 1024 endpoints: 64 windows
    for (uint32_t q = 0; q < 66; ++q) h.send(Pkt{kResp, kReq, kCnp, 100 + q, 0, 0}, kT0 + q);
    h.send(Pkt{kResp, kReq, kCnp, 165, 0, 0}, kT0 + 100);
    EXPECT_EQ(h.engine->counters().events_unwindowed.load(), 3u);
    h.finish(kT0 + 200);
    EXPECT_EQ(h.events(EventKind::cnp).size(), 67u);  // 64 windows, 3 events on their own
}

}  // namespace
}  // namespace insert::test
