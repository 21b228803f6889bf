// The ring between insert-gen's pipeline threads: every consumer sees every item, in
// order, whatever the relative speed of the threads; a full ring holds the producer back;
// a consumer of two rings sharing a doorbell sees both streams to the end.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "bench/gen/broadcast_ring.hpp"

namespace insert::gen {
namespace {

constexpr uint64_t kItems = 300'000;

// Consumer `c` checks the sequence; `slow` makes it yield now and then so that the
// producer fills the ring and has to wait for it.
uint64_t consume(BroadcastRing<uint64_t>& ring, unsigned c, bool slow) {
    uint64_t expect = 0, bad = 0, spans = 0;
    for (;;) {
        const auto items = ring.acquire(c);
        if (items.empty()) break;
        for (uint64_t v : items) bad += v != expect++;
        if (slow && ++spans % 8 == 0) std::this_thread::yield();
        ring.release(c, items.size());
    }
    return bad + (expect != kItems);
}

TEST(BroadcastRing, every_consumer_sees_every_item_in_order) {
    for (std::size_t capacity : {64u, 1024u, 16384u}) {
        BroadcastRing<uint64_t> ring(capacity, 16, 2);
        uint64_t errors[2] = {1, 1};
        std::thread fast([&] { errors[0] = consume(ring, 0, false); });
        std::thread slow([&] { errors[1] = consume(ring, 1, true); });
        for (uint64_t i = 0; i < kItems; ++i) {
            ring.slot() = i;
            ring.commit();
        }
        ring.close();
        fast.join();
        slow.join();
        EXPECT_EQ(errors[0], 0u) << capacity;
        EXPECT_EQ(errors[1], 0u) << capacity;
    }
}

TEST(BroadcastRing, two_rings_one_doorbell) {
    std::atomic<uint32_t> doorbell{0};
    BroadcastRing<uint64_t> a(256, 8, 1, &doorbell), b(512, 32, 1, &doorbell);
    uint64_t next[2] = {0, 0}, bad = 0;
    std::thread consumer([&] {
        BroadcastRing<uint64_t>* rings[2] = {&a, &b};
        for (;;) {
            const uint32_t seen = doorbell.load(std::memory_order_acquire);
            bool idle = true;
            for (int r = 0; r < 2; ++r) {
                const auto items = rings[r]->try_acquire(0);
                for (uint64_t v : items) bad += v != next[r]++;
                if (!items.empty()) rings[r]->release(0, items.size()), idle = false;
            }
            if (!idle) continue;
            if (a.drained(0) && b.drained(0)) break;
            doorbell.wait(seen, std::memory_order_acquire);
        }
    });
    std::thread producer_b([&] {
        for (uint64_t i = 0; i < kItems; ++i) {
            b.slot() = i;
            b.commit();
        }
        b.close();
    });
    for (uint64_t i = 0; i < kItems / 3; ++i) {
        a.slot() = i;
        a.commit();
    }
    a.close();
    producer_b.join();
    consumer.join();
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(next[0], kItems / 3);
    EXPECT_EQ(next[1], kItems);
}

}  // namespace
}  // namespace insert::gen
