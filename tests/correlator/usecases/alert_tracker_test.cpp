// Offences into alerts as they are found (correlator/usecases/alert_tracker.hpp): a live
// run settles in windows what a batch run settles at once, and must write the same alerts.
#include "correlator/usecases/alert_tracker.hpp"
#include "correlator/usecases/origin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

namespace insert::correlate {
namespace {

constexpr int64_t kMs = 1'000'000;

Offence offence(AlertKind kind, int64_t t, uint8_t victim, uint8_t source, uint32_t psn,
                uint32_t rkey) {
    Offence o;
    o.kind = kind;
    o.t = t;
    o.msg.t_first = t;
    o.msg.psn_first = psn;
    o.msg.rkey = rkey;
    o.msg.pkts = 1;
    o.victim_ip = *Ip::parse("10.0.0." + std::to_string(victim));
    o.victim_qpn = 100 + victim;
    o.source_ip = *Ip::parse("10.0.1." + std::to_string(source));
    return o;
}

auto fields(const Alert& a) {
    return std::make_tuple(a.kind, a.t_ns, a.t_last_ns, a.count, a.pkts, a.rkeys, a.distinct_rkeys,
                           a.victims, a.first.victim_ip.bytes, a.first.victim_qpn,
                           a.first.source_ip.bytes, a.first.msg.psn_first);
}

// Random attacks: a few sources and victims, bursts and pauses around --alert-gap and
// --scan-window, every kind, offences found out of order within a window.
std::vector<Offence> random_offences(std::mt19937_64& rng) {
    const AlertKind kinds[] = {AlertKind::rkey_unknown,    AlertKind::rkey_stale,
                               AlertKind::out_of_bounds,   AlertKind::access_denied,
                               AlertKind::unowned_qp,      AlertKind::peer_mismatch,
                               AlertKind::injected_message};
    std::vector<Offence> out;
    int64_t t = 1'000'000'000;
    for (uint32_t i = 0; i < 400; ++i) {
        t += std::uniform_int_distribution<int64_t>(0, 3)(rng) == 0 ? 1500 * kMs : 40 * kMs;
        out.push_back(offence(kinds[rng() % 7], t + static_cast<int64_t>(rng() % (20 * kMs)),
                              static_cast<uint8_t>(1 + rng() % 3),
                              static_cast<uint8_t>(1 + rng() % 2), i,
                              static_cast<uint32_t>(rng() % 50)));
    }
    return out;
}

TEST(AlertTracker, settling_in_windows_gives_the_alerts_of_settling_at_once) {
    SecurityOptions options;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<Offence> offences = random_offences(rng);
        const std::vector<Alert> batch = aggregate_alerts(offences, options);

        // Live: windows of 300 ms of data time; the offences of a window arrive shuffled,
        // injected_message ones up to 2 s late (the join decides them later).
        std::sort(offences.begin(), offences.end(),
                  [](const Offence& a, const Offence& b) { return a.t < b.t; });
        AlertTracker live(options, true);
        std::vector<Alert> settled;
        std::vector<Offence> pending_injected;
        std::size_t next = 0;
        for (int64_t w = offences.front().t; next < offences.size() || !pending_injected.empty();
             w += 300 * kMs) {
            std::vector<Offence> window;
            while (next < offences.size() && offences[next].t <= w) {
                if (offences[next].kind == AlertKind::injected_message)
                    pending_injected.push_back(offences[next]);
                else
                    window.push_back(offences[next]);
                ++next;
            }
            int64_t injected_settled = w + 1;
            std::erase_if(pending_injected, [&](const Offence& o) {
                if (o.t > w - 2000 * kMs) {
                    injected_settled = std::min(injected_settled, o.t);
                    return false;
                }
                window.push_back(o);
                return true;
            });
            std::shuffle(window.begin(), window.end(), rng);
            for (const Offence& o : window) live.add(o);
            for (Alert& a : live.settle(w + 1, injected_settled)) settled.push_back(a);
        }
        for (Alert& a : live.settle(INT64_MAX, INT64_MAX)) settled.push_back(a);
        EXPECT_EQ(live.offences_held(), 0u);

        ASSERT_EQ(settled.size(), batch.size()) << "seed " << seed;
        std::vector<decltype(fields(batch[0]))> a, b;
        for (const Alert& x : batch) a.push_back(fields(x));
        for (const Alert& x : settled) b.push_back(fields(x));
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << "seed " << seed;
    }
}

TEST(AlertTracker, an_alert_is_opened_once_at_its_first_offence_and_a_scan_at_its_threshold) {
    SecurityOptions options;  // gap 1 s, scan: 8 within 1 s
    AlertTracker tracker(options, true);
    for (uint32_t i = 0; i < 10; ++i)
        tracker.add(offence(AlertKind::rkey_unknown, 1'000'000'000 + i * 10 * kMs, 1, 1, i, i));
    std::vector<Alert> opened = tracker.take_opened();
    ASSERT_EQ(opened.size(), 2u);  // the rkey_unknown episode, and the scan at its 8th
    EXPECT_EQ(opened[0].kind, AlertKind::rkey_unknown);
    EXPECT_EQ(opened[0].count, 1u);
    EXPECT_EQ(opened[1].kind, AlertKind::rkey_scan);
    EXPECT_EQ(opened[1].t_ns, 1'000'000'000 + 7 * 10 * kMs);
    EXPECT_TRUE(tracker.take_opened().empty());
    // Nothing ended before the gap passed; then both, with every offence counted.
    EXPECT_TRUE(tracker.settle(1'000'000'000 + 1000 * kMs, INT64_MAX).empty());
    const std::vector<Alert> closed = tracker.settle(2'100'000'000, INT64_MAX);
    ASSERT_EQ(closed.size(), 2u);
    EXPECT_EQ(closed[0].count, 10u);
    EXPECT_EQ(closed[1].count, 10u);
    EXPECT_EQ(tracker.offences_held(), 0u);
    // A second episode, after a pause longer than the gap, is opened again.
    tracker.add(offence(AlertKind::rkey_unknown, 5'000'000'000, 1, 1, 99, 1));
    EXPECT_EQ(tracker.take_opened().size(), 1u);
}

// docs/correlation.md 8: an alert's evidence.origin is its first offence's. A live run adds
// an offence whose origin is not known yet (origin_query); its episode waits for it - the
// first offence's only: a later one's answer, or none, holds nothing back.
TEST(AlertTracker, an_episode_waits_for_its_first_offences_origin) {
    SecurityOptions options;
    AlertTracker tracker(options, true);
    Offence first = offence(AlertKind::injected_message, 1'000'000'000, 1, 1, 1, 0);
    first.origin_query = 7;
    Offence later = offence(AlertKind::injected_message, 1'000'000'000 + 10 * kMs, 1, 1, 2, 0);
    later.origin_query = 8;
    tracker.add(later);
    tracker.add(first);
    EXPECT_EQ(tracker.take_opened().size(), 1u);  // fired at once all the same
    EXPECT_TRUE(tracker.settle(INT64_MAX, INT64_MAX).empty());
    PacketOrigin seen, usual;
    seen.known = usual.known = true;
    seen.mac = {2, 0, 0, 0, 0, 5};
    usual.mac = {2, 0, 0, 0, 0, 1};
    seen.ttl = usual.ttl = 64;
    tracker.resolve_origins({{7, compare_origin(seen, usual)}});
    const std::vector<Alert> closed = tracker.settle(INT64_MAX, INT64_MAX);
    ASSERT_EQ(closed.size(), 1u);
    EXPECT_EQ(closed[0].count, 2u);
    EXPECT_EQ(closed[0].first.msg.psn_first, 1u);
    EXPECT_EQ(closed[0].first.origin.seen.mac, seen.mac);
    EXPECT_TRUE(closed[0].first.origin.mac_differs);
    EXPECT_FALSE(closed[0].first.origin.ttl_differs);
    EXPECT_EQ(tracker.offences_held(), 0u);
}

// The tallies behind `usual` (origin.hpp): the address's posted messages to the QP win over
// more numerous unposted ones; without any to the QP, its messages to others count; a tie
// goes to the origin seen last; the fifth distinct origin pushes out the rarest; a question
// about an earlier time (a late record's) gets the answer of that time.
TEST(OriginBook, usual_is_the_most_common_of_the_preferred_messages) {
    const Ip a = *Ip::parse("10.0.0.1"), b = *Ip::parse("10.0.0.2"), c = *Ip::parse("10.0.0.3");
    const auto origin = [](uint8_t last, uint8_t ttl) {
        PacketOrigin o;
        o.known = true;
        o.mac = {2, 0, 0, 0, 0, last};
        o.ttl = ttl;
        return o;
    };
    OriginBook book;
    int64_t t = 0;
    // An offence at `at` (by default after every message so far).
    const auto msg = [&t](const Ip& src, const Ip& dst, uint32_t qpn, const PacketOrigin& o,
                          int64_t at = -1) {
        WireMsg m;
        m.src_ip = src;
        m.dst_ip = dst;
        m.dst_qpn = qpn;
        m.origin = o;
        m.t_first = at < 0 ? t + 1 : at;
        return m;
    };
    const auto note = [&](const Ip& dst, uint32_t qpn, const PacketOrigin& o, bool matched) {
        book.add({a, dst, qpn, 0, ++t, o, matched});
    };
    for (int k = 0; k < 3; ++k) note(b, 50, origin(5, 63), false);
    note(b, 50, origin(1, 64), true);
    note(c, 60, origin(7, 64), false);
    const OriginEvidence same_qp = book.evidence(msg(a, b, 50, origin(5, 63)));
    ASSERT_TRUE(same_qp.usual);
    EXPECT_EQ(same_qp.usual->mac[5], 1);  // posted, though outnumbered
    EXPECT_TRUE(same_qp.mac_differs && same_qp.ttl_differs && !same_qp.port_differs);
    const OriginEvidence other_qp = book.evidence(msg(a, b, 51, origin(1, 64)));
    ASSERT_TRUE(other_qp.usual);
    EXPECT_EQ(other_qp.usual->mac[5], 1);  // the address's posted messages, to any QP
    EXPECT_FALSE(other_qp.mac_differs || other_qp.ttl_differs || other_qp.port_differs);
    EXPECT_FALSE(book.evidence(msg(c, b, 50, origin(1, 64))).usual);  // nothing from c
    // To QP 60 only unposted ones: 7 then 8 once each - the tie goes to the later.
    note(c, 60, origin(8, 64), false);
    EXPECT_EQ(book.evidence(msg(a, c, 60, origin(8, 64))).usual->mac[5], 8);
    // Four distinct origins to QP 70, the first twice; a fifth replaces the rarest, stalest.
    for (uint8_t k : {20, 20, 21, 22, 23, 24}) note(b, 70, origin(k, 64), false);
    EXPECT_EQ(book.evidence(msg(a, b, 70, origin(24, 64))).usual->mac[5], 20);
    // Asked about times past: after the three unposted SENDs only (t 1-3), and before any.
    EXPECT_EQ(book.evidence(msg(a, b, 50, origin(5, 63), 4)).usual->mac[5], 5);
    EXPECT_FALSE(book.evidence(msg(a, b, 50, origin(5, 63), 1)).usual);
    book.forget_before(t + 1);
    EXPECT_EQ(book.tallies(), 0u);
}

}  // namespace
}  // namespace insert::correlate
