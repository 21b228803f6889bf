// insert-gen's event queue must give exactly the order of a binary heap on (time,
// scheduling order): the simulator's output bytes depend on it. Random schedules with
// many ties, events in the present window, in the next 4095 windows and far beyond, pushed
// while popping (as the simulator does), are compared with std::priority_queue.
#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <random>
#include <vector>

#include "bench/gen/event_queue.hpp"

namespace insert::gen {
namespace {

struct Ref {
    uint64_t t, seq;
    uint32_t id;
    bool operator>(const Ref& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

void compare_with_heap(uint64_t seed, uint64_t max_ahead) {
    std::mt19937_64 rng(seed);
    EventQueue<uint32_t> q;
    std::priority_queue<Ref, std::vector<Ref>, std::greater<Ref>> ref;
    uint64_t now = 0, seq = 0;
    uint32_t next_id = 0;
    auto schedule = [&](uint64_t at) {
        q.push(at, next_id);
        ref.push(Ref{at, seq++, next_id});
        ++next_id;
    };
    auto ahead = [&]() -> uint64_t {
        switch (rng() % 4) {
            case 0:
                return rng() % 4;  // ties at and near the present
            case 1:
                return rng() % 3000;
            case 2:
                return rng() % (uint64_t{1} << 20);
            default:
                return rng() % max_ahead;
        }
    };
    for (int i = 0; i < 2000; ++i) schedule(ahead());
    std::size_t popped = 0;
    while (!ref.empty()) {
        uint64_t t = 0;
        uint32_t id = 0;
        ASSERT_TRUE(q.pop(t, id));
        ASSERT_EQ(t, ref.top().t) << "pop " << popped;
        ASSERT_EQ(id, ref.top().id) << "pop " << popped;
        ref.pop();
        ++popped;
        now = t;
        if (next_id < 60000) {
            const int pushes = static_cast<int>(rng() % 3);  // 0..2: the queue drains
            for (int k = 0; k < pushes; ++k) schedule(now + ahead());
        }
    }
    uint64_t t = 0;
    uint32_t id = 0;
    EXPECT_FALSE(q.pop(t, id));
    EXPECT_GT(popped, 2000u);
}

// The hook of pop() sees each event at most once, before it comes out, and always sees
// those scheduled more than kLeadNs ahead (the simulator's prefetches depend on it).
TEST(GenEventQueue, announces_events_before_they_come_out) {
    std::mt19937_64 rng(7);
    using Queue = EventQueue<uint32_t>;
    Queue q;
    std::vector<uint64_t> at, pushed_at;
    std::vector<int> announced;
    uint64_t now = 0;
    auto schedule = [&](uint64_t t) {
        q.push(t, static_cast<uint32_t>(at.size()));
        at.push_back(t);
        pushed_at.push_back(now);
        announced.push_back(0);
    };
    auto ahead = [&]() -> uint64_t {
        switch (rng() % 3) {
            case 0:
                return rng() % (2 * Queue::kLeadNs);
            case 1:
                return rng() % 20000;
            default:
                return rng() % (uint64_t{1} << 26);
        }
    };
    for (int i = 0; i < 1000; ++i) schedule(ahead());
    uint64_t t = 0;
    uint32_t id = 0;
    std::size_t popped = 0;
    while (q.pop(t, id, [&](uint32_t next) { ++announced[next]; })) {
        ASSERT_LE(announced[id], 1) << "event " << id;
        if (at[id] > pushed_at[id] + Queue::kLeadNs) {
            ASSERT_EQ(announced[id], 1) << "event " << id;
        }
        announced[id] = 2;  // popped
        now = t;
        ++popped;
        if (at.size() < 50000)
            for (int k = static_cast<int>(rng() % 3); k > 0; --k) schedule(now + ahead());
    }
    EXPECT_EQ(popped, at.size());
}

TEST(GenEventQueue, pops_in_heap_order_near_future) {
    for (uint64_t seed = 1; seed <= 3; ++seed) compare_with_heap(seed, uint64_t{1} << 22);
}

TEST(GenEventQueue, pops_in_heap_order_with_events_beyond_the_windows) {
    for (uint64_t seed = 4; seed <= 6; ++seed) compare_with_heap(seed, uint64_t{1} << 34);
}

}  // namespace
}  // namespace insert::gen
