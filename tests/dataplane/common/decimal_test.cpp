// dataplane/common/decimal.hpp against std::to_string at every length boundary and on
// random values of every magnitude.
#include "dataplane/common/decimal.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace insert::decimal {
namespace {

std::string text(uint64_t v) {
    char buf[kMaxDigits + 1];
    return std::string(buf, write(buf, v));
}

TEST(Decimal, every_length_boundary_matches_to_string) {
    uint64_t p = 1;
    for (int digits = 1; digits <= 20; ++digits) {
        EXPECT_EQ(text(p), std::to_string(p));
        EXPECT_EQ(text(p - 1), std::to_string(p - 1));
        EXPECT_EQ(text(p + 1), std::to_string(p + 1));
        if (digits < 20) p *= 10;
    }
    EXPECT_EQ(text(0), "0");
    EXPECT_EQ(text(UINT64_MAX), "18446744073709551615");
    EXPECT_EQ(text(100'000'000), "100000000");
    EXPECT_EQ(text(1'700'000'000'123'456'789ull), "1700000000123456789");
}

TEST(Decimal, random_values_of_every_magnitude_match_to_string) {
    std::mt19937_64 rng(11);
    for (int i = 0; i < 100000; ++i) {
        const uint64_t v = rng() >> (rng() % 64);
        ASSERT_EQ(text(v), std::to_string(v)) << v;
    }
}

}  // namespace
}  // namespace insert::decimal
