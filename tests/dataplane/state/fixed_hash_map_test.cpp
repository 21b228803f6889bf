#include "dataplane/state/fixed_hash_map.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace insert::state
