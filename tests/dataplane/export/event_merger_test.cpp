// docs/semantics.md "Events": the exporter writes one record per destination endpoint, kind
// and second, merged from every worker's window of it once every worker's mark has passed
// it, equal to what one worker counting every event writes (SPEC invariant 1); and the
// windowed record's JSON fields.
#include "dataplane/export/event_merger.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/export/record_writer.hpp"
#include "dataplane/state/event_window.hpp"

namespace insert::exporter {
namespace {

using namespace insert::state;

constexpr uint64_t kSecond = 1'000'000'000;
const IpAddress kIp = *IpAddress::parse("10.0.0.2");

uint64_t source(uint32_t i) {
    return SourceSketch::hash(IpAddress::v4(0x0A400000u + i));
}

// A window of `kind` to (10.0.0.2, qpn) in second `window` with events from sources
// [first, first + n), one a microsecond from `t`.
Record window(EventKind kind, uint32_t qpn, uint32_t win, uint32_t first, uint32_t n, uint64_t t) {
    Record r;
    r.type = RecordType::event;
    r.event = open_window(kind, kIp, qpn, win);
    for (uint32_t i = 0; i < n; ++i)
        add_event(r.event, t + i * 1000, 100 + first + i, 0, 0, source(first + i));
    return r;
}

Record mark(uint32_t events, uint32_t timeouts) {
    Record r;
    r.type = RecordType::mark;
    r.mark = WindowMark{events, timeouts};
    return r;
}

struct Collected {
    std::vector<Record> out;
    EventMerger::Emit emit() {
        return [this](const Record& r) { out.push_back(r); };
    }
};

TEST(EventMerger, one_worker_windows_go_out_as_they_come_and_marks_are_dropped) {
    EventMerger m;
    m.set_sources(1);
    Collected c;
    m.take(window(EventKind::cnp, 7, 5, 0, 3, 5 * kSecond), 0, c.emit());
    m.take(mark(6, 0), 0, c.emit());
    ASSERT_EQ(c.out.size(), 1u);
    EXPECT_EQ(c.out[0].event.count, 3u);
    EXPECT_EQ(m.held(), 0u);
}

TEST(EventMerger, two_workers_windows_merge_into_the_one_a_single_worker_counts) {
    EventMerger m;
    m.set_sources(2);
    Collected c;
    // The sources of one QP split over two workers, each with a window of second 5; worker
    // 1's events are the later ones, but it sends first.
    m.take(window(EventKind::cnp, 7, 5, 40, 60, 5 * kSecond + 500), 1, c.emit());
    m.take(window(EventKind::cnp, 7, 5, 0, 40, 5 * kSecond + 100), 0, c.emit());
    m.take(mark(6, 0), 0, c.emit());
    EXPECT_TRUE(c.out.empty());  // worker 1 has not passed second 5
    m.take(mark(6, 0), 1, c.emit());
    ASSERT_EQ(c.out.size(), 1u);
    const Record one = window(EventKind::cnp, 7, 5, 0, 100, 5 * kSecond + 100);
    const EventRecord& got = c.out[0].event;
    EXPECT_EQ(got.count, 100u);
    EXPECT_EQ(got.t_ns, one.event.t_ns);
    EXPECT_EQ(got.psn, one.event.psn);
    EXPECT_EQ(got.t_last_ns, 5 * kSecond + 500 + 59'000);
    EXPECT_EQ(got.sources.count(), one.event.sources.count());
    std::string a, b;
    append_json(a, c.out[0]);
    Record expected = one;
    expected.event.t_last_ns = got.t_last_ns;  // the single window's last event is earlier
    append_json(b, expected);
    EXPECT_EQ(a, b);
    EXPECT_EQ(m.held(), 0u);
}

TEST(EventMerger, windows_wait_for_the_slowest_worker_and_timeouts_for_its_ticks) {
    EventMerger m;
    m.set_sources(2);
    Collected c;
    m.take(window(EventKind::gap, 7, 5, 0, 1, 5 * kSecond), 0, c.emit());
    m.take(window(EventKind::gap, 8, 6, 0, 1, 6 * kSecond), 0, c.emit());
    m.take(window(EventKind::timeout, 7, 5, 0, 1, 4 * kSecond), 0, c.emit());
    m.take(mark(7, 6), 0, c.emit());
    m.take(mark(6, 0), 1, c.emit());  // worker 1 passed second 5 only, and no tick yet
    ASSERT_EQ(c.out.size(), 1u);
    EXPECT_EQ(c.out[0].event.qpn, 7u);
    EXPECT_EQ(c.out[0].event.kind, EventKind::gap);
    m.take(mark(7, 5), 1, c.emit());
    ASSERT_EQ(c.out.size(), 2u);  // the gap of second 6; the timeout window 5 still waits
    EXPECT_EQ(c.out[1].event.qpn, 8u);
    m.take(mark(7, 6), 1, c.emit());
    ASSERT_EQ(c.out.size(), 3u);
    EXPECT_EQ(c.out[2].event.kind, EventKind::timeout);
    EXPECT_EQ(m.held(), 0u);
}

TEST(EventMerger, a_late_window_goes_out_alone_and_the_end_writes_what_is_held) {
    EventMerger m;
    m.set_sources(2);
    Collected c;
    m.take(mark(9, 9), 0, c.emit());
    m.take(mark(9, 9), 1, c.emit());
    // Time went back on a worker: a window every worker has passed.
    m.take(window(EventKind::cnp, 7, 4, 0, 2, 4 * kSecond), 1, c.emit());
    ASSERT_EQ(c.out.size(), 1u);
    m.take(window(EventKind::nak, 7, 9, 0, 2, 9 * kSecond), 1, c.emit());
    m.take(window(EventKind::nak, 7, 9, 2, 1, 9 * kSecond), 0, c.emit());
    EXPECT_EQ(m.held(), 1u);
    m.finish(c.emit());
    ASSERT_EQ(c.out.size(), 2u);
    EXPECT_EQ(c.out[1].event.count, 3u);
}

// Through the writer: marks never reach the output; pair events are not windows.
TEST(EventMerger, the_writer_merges_by_worker_and_writes_no_marks) {
    std::string text;
    {
        RecordWriter w(nullptr);
        w.set_event_sources(2);
        w.set_observer([&](const Record& r) { append_json(text, r), text += '\n'; });
        Record pair;
        pair.type = RecordType::event;
        pair.event = EventRecord{};
        pair.event.kind = EventKind::pair;
        pair.event.ip = kIp;
        pair.event.qpn = 7;
        pair.event.peer_ip = *IpAddress::parse("10.0.0.1");
        pair.event.peer_qpn = 9;
        pair.event.pair_by = PairBy::ip;
        pair.event.t_ns = 42;
        w.write(pair, 1);
        Record a = window(EventKind::cnp, 7, 1, 0, 2, kSecond),
               b = window(EventKind::cnp, 7, 1, 2, 1, kSecond + 5000);
        w.write(a, 0);
        w.write(b, 1);
        Record m0 = mark(2, 0), m1 = mark(2, 0);
        w.write(m0, 0);
        w.write(m1, 1);
        w.write_summary(SummaryCounts{});
    }
    EXPECT_EQ(text,
              "{\"type\":\"event\",\"kind\":\"pair\",\"ip\":\"10.0.0.2\",\"qpn\":7,\"t_ns\":42,"
              "\"psn\":0,\"peer_ip\":\"10.0.0.1\",\"peer_qpn\":9,\"pair_by\":\"ip\"}\n"
              "{\"type\":\"event\",\"kind\":\"cnp\",\"ip\":\"10.0.0.2\",\"qpn\":7,"
              "\"t_ns\":1000000000,\"psn\":100,\"count\":3,\"sources\":3,\"sources_exact\":true,"
              "\"t_last_ns\":1000005000,\"window_ns\":1000000000}\n");
}

TEST(RecordJson, windowed_kinds_carry_their_own_fields) {
    Record gap = window(EventKind::gap, 34, 3, 0, 2, 3 * kSecond);
    gap.event.missing = 12;
    Record nak = window(EventKind::fatal_nak, 34, 3, 0, 1, 3 * kSecond);
    nak.event.syndrome = 0x62;
    std::string out;
    append_json(out, gap);
    out += '\n';
    append_json(out, nak);
    EXPECT_EQ(out,
              "{\"type\":\"event\",\"kind\":\"gap\",\"ip\":\"10.0.0.2\",\"qpn\":34,"
              "\"t_ns\":3000000000,\"psn\":100,\"missing\":12,\"count\":2,\"sources\":2,"
              "\"sources_exact\":true,\"t_last_ns\":3000001000,\"window_ns\":3000000000}\n"
              "{\"type\":\"event\",\"kind\":\"fatal_nak\",\"ip\":\"10.0.0.2\",\"qpn\":34,"
              "\"t_ns\":3000000000,\"psn\":100,\"syndrome\":98,\"count\":1,\"sources\":1,"
              "\"sources_exact\":true,\"t_last_ns\":3000000000,\"window_ns\":3000000000}");
}

}  // namespace
}  // namespace insert::exporter
