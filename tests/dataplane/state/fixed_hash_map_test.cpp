#include "dataplane/state/fixed_hash_map.hpp"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace insert::state {
namespace {

// A deliberately bad hash so every key collides and probing/deletion are exercised.
struct CollidingHash {
    std::size_t operator()(uint32_t) const noexcept { return 3; }
};

TEST(FixedHashMap, refuses_inserts_beyond_capacity) {
    FixedHashMap<uint32_t, int, CollidingHash> m(4);
    for (uint32_t k = 0; k < 4; ++k) ASSERT_NE(m.insert(k, int(k)), nullptr);
    EXPECT_EQ(m.insert(99, 1), nullptr);
    EXPECT_NE(m.insert(2, 5), nullptr);  // existing key still found
    EXPECT_EQ(*m.find(2), 2);
}

TEST(FixedHashMap, erase_keeps_colliding_keys_reachable) {
    FixedHashMap<uint32_t, int, CollidingHash> m(8);
    for (uint32_t k = 0; k < 6; ++k) m.insert(k, int(k) * 10);
    EXPECT_TRUE(m.erase(1));
    EXPECT_TRUE(m.erase(3));
    EXPECT_FALSE(m.erase(3));
    for (uint32_t k : {0u, 2u, 4u, 5u}) {
        ASSERT_NE(m.find(k), nullptr) << k;
        EXPECT_EQ(*m.find(k), int(k) * 10);
    }
    EXPECT_EQ(m.find(1), nullptr);
    EXPECT_EQ(m.size(), 4u);
}

struct SpreadHash {
    std::size_t operator()(uint32_t k) const noexcept { return mix64(k); }
};

TEST(FixedHashMap, a_growing_map_doubles_when_half_full_up_to_its_capacity) {
    FixedHashMap<uint32_t, uint32_t, SpreadHash> m(1000, 10);
    EXPECT_EQ(m.slot_count(), 32u);  // room for 10 at load 1/2, rounded up to a power of two
    for (uint32_t k = 0; k < 16; ++k) ASSERT_NE(m.insert(k, k), nullptr);
    EXPECT_EQ(m.slot_count(), 32u);  // 16 of 32: still at most half full
    ASSERT_NE(m.insert(16, 16), nullptr);
    EXPECT_EQ(m.slot_count(), 64u);
    for (uint32_t k = 17; k < 1000; ++k) ASSERT_NE(m.insert(k, k), nullptr);
    EXPECT_EQ(m.slot_count(), 2048u);  // the fixed size for 1000 entries
    EXPECT_EQ(m.insert(5000, 1), nullptr);
    for (uint32_t k = 0; k < 1000; ++k) {
        ASSERT_NE(m.find(k), nullptr) << k;
        EXPECT_EQ(*m.find(k), k);
    }
}

// Random inserts, erases and lookups against std::unordered_map, across every doubling,
// with a hash that collides a lot so that probe runs cross the old table's end.
TEST(FixedHashMap, a_growing_map_agrees_with_a_reference_map_under_churn) {
    struct FewBits {
        std::size_t operator()(uint32_t k) const noexcept { return mix64(k % 97) << 3; }
    };
    FixedHashMap<uint32_t, uint32_t, FewBits> m(4096, 8);
    std::unordered_map<uint32_t, uint32_t> ref;
    std::mt19937 rng(7);
    for (int step = 0; step < 60000; ++step) {
        const uint32_t k = rng() % 6000;
        switch (rng() % 3) {
            case 0:
            case 1: {
                uint32_t* v = m.insert(k, k * 3);
                if (ref.size() < 4096 || ref.count(k)) {
                    ASSERT_NE(v, nullptr) << step;
                    ref.emplace(k, k * 3);
                } else {
                    ASSERT_EQ(v, nullptr) << step;
                }
                break;
            }
            case 2:
                ASSERT_EQ(m.erase(k), ref.erase(k) == 1) << step;
                break;
        }
        ASSERT_EQ(m.size(), ref.size()) << step;
    }
    for (uint32_t k = 0; k < 6000; ++k) {
        const uint32_t* v = m.find(k);
        ASSERT_EQ(v != nullptr, ref.count(k) == 1) << k;
        if (v) {
            EXPECT_EQ(*v, ref[k]);
        }
    }
}

// The probing core itself (common/linear_probing.hpp), on a table of 8 slots whose keys are
// their own probe starts: runs that wrap around the end, and deletions that must move an
// entry back across the wrap - or leave it where it is when its start lies past the hole.
struct Cell {
    uint64_t key = 0;
    bool used = false;
};

TEST(LinearProbing, backward_shift_across_the_wrap_keeps_every_key_reachable) {
    constexpr std::size_t kMask = 7;
    const auto used = [](const Cell& c) { return c.used; };
    const auto start_of = [](const Cell& c) { return c.key; };
    const auto clear = [](Cell& c) { c = Cell{}; };
    const auto find = [&](Cell* cells, uint64_t key) {
        return common::probe(cells, kMask, key, used,
                             [key](const Cell& c) { return c.key == key; });
    };
    // Keys 6, 14 (start 6), 7, 15 (start 7), 1 (start 1) in insertion order.
    for (const uint64_t erased : {6u, 14u, 7u, 15u, 1u}) {
        Cell cells[8];
        for (const uint64_t key : {6u, 14u, 7u, 15u, 1u}) {
            const common::Probe<Cell> p = find(cells, key);
            ASSERT_FALSE(p.found);
            *p.slot = Cell{key, true};
        }
        // 6 and 14 at 6 and 7; 7 and 15 wrapped to 0 and 1; 1 displaced to 2.
        EXPECT_EQ(cells[0].key, 7u);
        EXPECT_EQ(cells[2].key, 1u);
        const common::Probe<Cell> p = find(cells, erased);
        ASSERT_TRUE(p.found);
        common::erase_at(cells, kMask, static_cast<std::size_t>(p.slot - cells), used, start_of,
                         clear);
        int held = 0;
        for (const Cell& c : cells) held += c.used;
        EXPECT_EQ(held, 4);
        for (const uint64_t key : {6u, 14u, 7u, 15u, 1u})
            EXPECT_EQ(find(cells, key).found, key != erased)
                << "erased " << erased << ", key " << key;
    }
}

}  // namespace
}  // namespace insert::state
