// Idle eviction at tick(): the deadline wheel must act on exactly the parts the rule of a
// scan of every slot names, at the same ticks and in ascending slot order (SPEC invariant
// 1 depends on it: records must not depend on what else a worker holds). Until the event
// windows became per destination endpoint (docs/semantics.md "Events"), a part's CNP
// window was a deadline of the wheel too; CNPs are now traffic like any other here, and
// the `timeout` events' windows are checked below.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "dataplane/proto/opcodes.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;

constexpr const char* kA = "10.0.0.1";
constexpr const char* kB = "10.0.0.2";
constexpr uint64_t kSecond = 1'000'000'000;

// What a tick did, in order: ('q', qpn, 0) the final qp record of an eviction.
using Act = std::tuple<char, uint32_t, uint32_t>;

state::EngineConfig config_with(uint64_t timeout, uint32_t capacity = 1024) {
    state::EngineConfig c;
    c.max_endpoints = capacity;
    c.idle_timeout_ns = timeout;
    return c;
}

std::vector<Act> acts_since(const EngineHarness& h, std::size_t from) {
    std::vector<Act> out;
    for (std::size_t i = from; i < h.sink.records.size(); ++i) {
        const state::Record& r = h.sink.records[i];
        if (r.type == state::RecordType::qp && r.qp.evicted) out.emplace_back('q', r.qp.qpn, 0);
    }
    return out;
}

std::vector<Act> tick(EngineHarness& h, uint64_t now) {
    const std::size_t from = h.sink.records.size();
    h.engine->tick(now);
    return acts_since(h, from);
}

uint64_t examined(const EngineHarness& h) {
    return h.engine->counters().tick_examined.load();
}

// The rule tick() had as a scan of every used slot, with the engine's slot allocation
// (free slots reused last-freed first, then the next never used): the reference.
class ScanModel {
  public:
    ScanModel(uint64_t timeout, uint32_t capacity) : timeout_(timeout), capacity_(capacity) {}

    void packet(uint32_t qpn, uint64_t ts) {
        uint32_t i;
        const auto found = index_.find(qpn);
        if (found != index_.end()) {
            i = found->second;
        } else {
            if (!free_.empty()) {
                i = free_.back();
                free_.pop_back();
            } else if (slots_.size() < capacity_) {
                i = static_cast<uint32_t>(slots_.size());
                slots_.emplace_back();
            } else {
                return;  // table full: not tracked
            }
            slots_[i] = Slot{qpn, ts, true};
            index_[qpn] = i;
        }
        slots_[i].t_last = ts;
    }

    std::vector<Act> tick(uint64_t now) {
        std::vector<Act> out;
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            Slot& s = slots_[i];
            if (!s.live) continue;
            if (now > s.t_last && now - s.t_last > timeout_) {
                out.emplace_back('q', s.qpn, 0);
                s.live = false;
                index_.erase(s.qpn);
                free_.push_back(i);
            }
        }
        return out;
    }

  private:
    struct Slot {
        uint32_t qpn;
        uint64_t t_last;
        bool live;
    };
    uint64_t timeout_;
    uint32_t capacity_;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
    std::map<uint32_t, uint32_t> index_;
};

// Engine and model side by side.
struct Pair {
    Pair(uint64_t timeout, uint32_t capacity)
        : h(config_with(timeout, capacity)), model(timeout, capacity) {}
    void packet(uint32_t qpn, uint64_t ts, bool cnp = false) {
        h.send(Pkt{kA, kB, cnp ? kCnp : kSendOnly, qpn, psn[qpn]++, cnp ? 0u : 8u}, ts);
        model.packet(qpn, ts);
    }
    // The tick's acts, checked against the model's.
    std::vector<Act> tick(uint64_t now) {
        auto got = test::tick(h, now);
        EXPECT_EQ(got, model.tick(now)) << "tick at " << now;
        return got;
    }
    EngineHarness h;
    ScanModel model;
    std::map<uint32_t, uint32_t> psn;
};

TEST(EngineExpiry, staggered_endpoints_go_at_the_scans_ticks_in_slot_order) {
    constexpr uint64_t kTimeout = 8000;  // buckets of 1000 ns
    Pair p(kTimeout, 1024);
    constexpr uint32_t kEndpoints = 300;
    for (uint32_t k = 0; k < kEndpoints; ++k) p.packet(100 + k, k);  // slot k
    // Last packets scattered over 7 us, not in slot order; ticks at multiples of 1000 ns
    // before the first packet at or past each, as a worker ticks.
    std::vector<std::pair<uint64_t, uint32_t>> last;
    for (uint32_t k = 0; k < kEndpoints; ++k) last.emplace_back(1000 + (k * 7919) % 7000, k);
    std::vector<uint64_t> expected(kEndpoints);
    for (const auto& [t, k] : last) expected[k] = ((t + kTimeout) / 1000 + 1) * 1000;
    std::sort(last.begin(), last.end());
    uint64_t next_tick = 1000;
    for (const auto& [t, k] : last) {
        for (; next_tick <= t; next_tick += 1000) EXPECT_TRUE(p.tick(next_tick).empty());
        p.packet(100 + k, t);
    }
    std::vector<uint64_t> evicted_at(kEndpoints);
    std::size_t evictions = 0;
    for (; next_tick <= 20000; next_tick += 1000) {
        const auto acts = p.tick(next_tick);
        evictions += acts.size();
        for (const auto& a : acts) evicted_at[std::get<1>(a) - 100] = next_tick;
        // Slot k holds qpn 100 + k: ascending slots, ascending QPNs.
        EXPECT_TRUE(std::is_sorted(acts.begin(), acts.end(), [](const Act& a, const Act& b) {
            return std::get<1>(a) < std::get<1>(b);
        }));
    }
    EXPECT_EQ(evictions, kEndpoints);
    EXPECT_EQ(evicted_at, expected);  // the first tick more than the timeout after the last
    EXPECT_EQ(p.h.engine->counters().endpoints_live.load(), 0u);
}

TEST(EngineExpiry, traffic_keeps_an_endpoint_alive_and_it_is_refiled_not_rescanned) {
    constexpr uint64_t kTimeout = 8000;
    Pair p(kTimeout, 1024);
    uint64_t now = 0;
    for (uint64_t t = 0; t <= 50000; t += 500) {
        if (t % 1000 == 0 && t > 0) {
            now = t;
            EXPECT_TRUE(p.tick(now).empty());
        }
        p.packet(7, t);
    }
    // Examined once per timeout or so (its filed deadline came, it was refiled at the
    // newer one), not at each of the 50 ticks.
    EXPECT_GE(examined(p.h), 5u);
    EXPECT_LE(examined(p.h), 8u);
    for (now = 51000; now <= 58000; now += 1000) EXPECT_TRUE(p.tick(now).empty());
    EXPECT_EQ(p.tick(59000), (std::vector<Act>{{'q', 7, 0}}));  // idle 9000 > 8000 ns
}

// The `timeout` events of an eviction fall in the window of the part's deadline (its last
// packet + the timeout), and the window goes out at the first tick past its second: with
// several workers each ticks at its own packets' boundaries, but the deadline is the same.
TEST(EngineExpiry, timeouts_fall_in_the_window_of_their_deadline_and_go_out_past_it) {
    constexpr uint64_t kTimeout = 400'000'000;  // 0.4 s, ticks every 50 ms
    EngineHarness h(config_with(kTimeout));
    const uint64_t t0 = 7 * kSecond + 500'000'000;
    h.send(Pkt{kA, kB, kSendFirst, 9, 1, 256}, t0);  // idle from 7.5 s: deadline 7.9 s
    h.send(Pkt{"10.0.0.3", kB, kSendFirst, 9, 40, 256}, t0 + 200'000'000);  // 8.1 s: window 8
    const auto timeouts = [&] { return h.events(state::EventKind::timeout); };
    h.engine->tick(7 * kSecond + 950'000'000);
    EXPECT_TRUE(timeouts().empty());  // evicted, its window (7) still open
    h.engine->tick(8 * kSecond);
    ASSERT_EQ(timeouts().size(), 1u);
    EXPECT_EQ(timeouts()[0].window, 7u);
    EXPECT_EQ(timeouts()[0].t_ns, t0);  // the part's last packet, as before windows
    EXPECT_EQ(timeouts()[0].psn, 1u);
    EXPECT_EQ(timeouts()[0].count, 1u);
    h.engine->tick(8 * kSecond + 150'000'000);  // the second part goes: window 8
    EXPECT_EQ(timeouts().size(), 1u);
    h.engine->tick(9 * kSecond);
    ASSERT_EQ(timeouts().size(), 2u);
    EXPECT_EQ(timeouts()[1].window, 8u);
    EXPECT_EQ(timeouts()[1].psn, 40u);
    // A mark follows each flush: every timeout window before 9 s is out.
    const state::Record& last = h.sink.records.back();
    ASSERT_EQ(last.type, state::RecordType::mark);
    EXPECT_EQ(last.mark.timeouts, 9u);
}

TEST(EngineExpiry, reused_slots_are_evicted_in_slot_order_not_creation_order) {
    constexpr uint64_t kTimeout = 8000;
    Pair p(kTimeout, 4);
    for (uint32_t k = 0; k < 4; ++k) p.packet(10 + k, 1100 + k);  // slots 0..3
    EXPECT_EQ(p.tick(9000).size(), 0u);
    EXPECT_EQ(p.tick(10000).size(), 4u);
    // Freed 0, 1, 2, 3: taken again last-freed first, so 20 is in slot 3, 23 in slot 0.
    for (uint32_t k = 0; k < 4; ++k) p.packet(20 + k, 10500);
    p.packet(5, 10600);  // no room: not tracked
    EXPECT_EQ(p.tick(19000),
              (std::vector<Act>{{'q', 23, 0}, {'q', 22, 0}, {'q', 21, 0}, {'q', 20, 0}}));
    // An evicted key comes back with fresh counters.
    p.packet(10, 20000);
    p.packet(10, 20001);
    p.h.finish(20002);
    // The last qp record (the timeout windows and their mark come after it).
    const auto last_qp =
        std::find_if(p.h.sink.records.rbegin(), p.h.sink.records.rend(),
                     [](const auto& r) { return r.type == state::RecordType::qp; });
    ASSERT_NE(last_qp, p.h.sink.records.rend());
    const state::Record& last = *last_qp;
    EXPECT_EQ(last.qp.qpn, 10u);
    EXPECT_FALSE(last.qp.evicted);
    EXPECT_EQ(last.qp.pkts, 2u);
}

TEST(EngineExpiry, ticks_whose_time_goes_back) {
    constexpr uint64_t kTimeout = 8000;
    Pair p(kTimeout, 1024);
    p.packet(1, 15000);
    EXPECT_TRUE(p.tick(20000).empty());
    // A packet behind the last tick (its deadline's bucket is passed) and a tick behind
    // the last one: the scan evicts it at once, as idle at 9500.
    p.packet(2, 1000);
    EXPECT_EQ(p.tick(9500), (std::vector<Act>{{'q', 2, 0}}));
    EXPECT_TRUE(p.tick(12000).empty());
    EXPECT_TRUE(p.tick(23000).empty());
    EXPECT_EQ(p.tick(23001), (std::vector<Act>{{'q', 1, 0}}));
    // A packet older than the part's last moves its deadline back.
    p.packet(3, 30000);
    p.packet(3, 25000);
    EXPECT_TRUE(p.tick(33000).empty());
    EXPECT_EQ(p.tick(33001), (std::vector<Act>{{'q', 3, 0}}));
    EXPECT_TRUE(p.tick(1000).empty());
}

TEST(EngineExpiry, a_tick_examines_the_due_buckets_entries_not_every_slot) {
    constexpr uint64_t kTimeout = 8000;
    Pair p(kTimeout, 4096);
    constexpr uint32_t kEndpoints = 1000;
    for (uint32_t k = 0; k < kEndpoints; ++k) p.packet(k, 10 * k);  // to 9990 ns
    uint64_t total = 0;
    for (uint64_t now = 1000; now <= 20000; now += 1000) {
        const uint64_t before = examined(p.h);
        const auto acts = p.tick(now);
        // Ticks at multiples of the bucket width find every entry of a due bucket due.
        EXPECT_EQ(examined(p.h) - before, acts.size()) << "tick at " << now;
        if (now <= 8000) {
            EXPECT_EQ(acts.size(), 0u);
        }
        total += acts.size();
    }
    EXPECT_EQ(total, kEndpoints);
    EXPECT_EQ(examined(p.h), kEndpoints);
}

TEST(EngineExpiry, no_timeout_no_eviction) {
    Pair p(0, 16);
    p.packet(1, 10);
    EXPECT_TRUE(test::tick(p.h, UINT64_MAX).empty());
    EXPECT_EQ(examined(p.h), 0u);
}

// Random traffic, CNPs, timestamps and ticks that sometimes go back, a table smaller than
// the keys: every tick does what the scan did.
void random_against_the_scan(uint64_t timeout, uint64_t step, uint64_t start, uint32_t seed) {
    constexpr uint32_t kCapacity = 48;
    constexpr uint32_t kKeys = 64;
    Pair p(timeout, kCapacity);
    std::mt19937_64 rng(seed);
    const uint64_t period = std::max<uint64_t>(timeout / 8, 1);
    uint64_t clock = start;
    uint64_t next_tick = (clock / period + 1) * period;
    std::size_t acts = 0;
    for (int n = 0; n < 20000 && !::testing::Test::HasFailure(); ++n) {
        const uint64_t r = rng() % 100;
        if (r < 3) {
            // An odd tick: anywhere up to two timeouts back, or a little ahead.
            const uint64_t back = rng() % (2 * timeout + 1);
            acts +=
                p.tick(rng() % 2 ? clock - std::min(back, clock) : clock + rng() % period).size();
            continue;
        }
        uint64_t ts = clock + rng() % step;
        if (r < 6) ts = clock - std::min(rng() % (timeout + step), clock);  // out of order
        for (; next_tick <= ts; next_tick += period) acts += p.tick(next_tick).size();
        clock = std::max(clock, ts);
        p.packet(static_cast<uint32_t>(rng() % kKeys), ts, rng() % 5 == 0);
    }
    for (int k = 0; k < 40; ++k, next_tick += period) acts += p.tick(next_tick).size();
    EXPECT_GT(acts, 100u);
}

TEST(EngineExpiry, random_traffic_matches_the_scan_short_timeout) {
    random_against_the_scan(8000, 1500, 0, 1);
}

TEST(EngineExpiry, random_traffic_matches_the_scan_timeout_of_seconds) {
    random_against_the_scan(3 * kSecond, 300'000'000, 1'700'000'000 * kSecond, 2);
}

TEST(EngineExpiry, random_traffic_matches_the_scan_timeout_below_a_second) {
    random_against_the_scan(500'000'000, 60'000'000, 5 * kSecond, 3);
}

TEST(EngineExpiry, random_traffic_matches_the_scan_timeout_of_a_few_ns) {
    random_against_the_scan(7, 3, 1'000'000, 4);
}

// The wheel's arrays (links, bucket, room for a tick's candidates: 20 bytes a slot) exist
// only with idle eviction: a live port locks every byte of its tables.
TEST(EngineExpiry, without_idle_eviction_there_is_no_wheel_to_pay_for) {
    const state::EngineConfig with = config_with(kSecond, 4096), without = config_with(0, 4096);
    EXPECT_EQ(state::Engine::memory_bytes(with) - state::Engine::memory_bytes(without), 4096u * 20);
    EngineHarness a(with), b(without);
    EXPECT_EQ(a.engine->bytes_per_endpoint() - b.engine->bytes_per_endpoint(), 20u);
    // And without it, an engine still works to the end.
    b.send(Pkt{kA, kB, kSendOnly, 7, 1, 64}, 10);
    b.engine->tick(kSecond);
    b.finish(2 * kSecond);
    EXPECT_EQ(b.qp(kB, 7).pkts, 1u);
}

}  // namespace
}  // namespace insert::test
