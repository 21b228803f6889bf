// insert-gen's FlatMap (the truth observer's endpoint and pairing lookups) against
// std::unordered_map: random keys with many repeats, through several growths.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>

#include "bench/gen/flat_map.hpp"

namespace insert::gen {
namespace {

TEST(GenFlatMap, agrees_with_unordered_map) {
    std::mt19937_64 rng(11);
    FlatMap<uint32_t> map(4);  // grows from 16 slots
    std::unordered_map<uint64_t, uint32_t> ref;
    for (uint32_t i = 0; i < 200000; ++i) {
        // Keys shaped like the observer's (host << 32 | qpn), some drawn again and again.
        const uint64_t key = (rng() % 16) << 32 | (rng() % 50000);
        if (rng() % 4 == 0) {
            const uint32_t* got = map.find(key);
            const auto it = ref.find(key);
            ASSERT_EQ(got != nullptr, it != ref.end()) << key;
            if (got) {
                ASSERT_EQ(*got, it->second);
            }
            continue;
        }
        const auto [value, added] = map.try_emplace(key, i);
        const auto [it, ref_added] = ref.try_emplace(key, i);
        ASSERT_EQ(added, ref_added) << key;
        ASSERT_EQ(*value, it->second) << key;
        if (rng() % 8 == 0) ++map[key], ++ref[key];
    }
    EXPECT_EQ(map.size(), ref.size());
    for (const auto& [key, value] : ref) {
        ASSERT_TRUE(map.contains(key));
        EXPECT_EQ(*map.find(key), value);
    }
    EXPECT_FALSE(map.contains(uint64_t{99} << 32));
}

}  // namespace
}  // namespace insert::gen
