// The distinct-source count of an event window (state/source_sketch.hpp, docs/semantics.md
// "Events"): exact up to 20 sources; above, an estimate within the stated bound (20%, three
// standard errors of 6.5%); and the merge of any split equal to one sketch of every source,
// which makes the exporter's merged windows the same for any worker count.
#include "dataplane/state/source_sketch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace insert::test {
namespace {

using state::SourceSketch;

uint64_t source(uint32_t i) {
    return SourceSketch::hash(proto::IpAddress::v4(0x0A400000u + i));
}

TEST(SourceSketch, exact_up_to_twenty_distinct_sources) {
    SourceSketch s;
    EXPECT_EQ(s.count(), 0u);
    for (int round = 0; round < 3; ++round)
        for (uint32_t i = 0; i < SourceSketch::kExactMax; ++i) {
            s.add(source(i));
            EXPECT_EQ(s.count(), round == 0 ? i + 1 : SourceSketch::kExactMax);
            EXPECT_TRUE(s.exact());
        }
    s.add(source(SourceSketch::kExactMax));
    EXPECT_FALSE(s.exact());
    EXPECT_NEAR(static_cast<double>(s.count()), 21, 0.2 * 21);
    // IPv4 and IPv6 sources with the same low bytes are different sources.
    SourceSketch mixed;
    mixed.add(SourceSketch::hash(*proto::IpAddress::parse("10.0.0.1")));
    mixed.add(SourceSketch::hash(*proto::IpAddress::parse("::a00:1")));
    EXPECT_EQ(mixed.count(), 2u);
}

// What each worker counted for one window, merged in any order, is what one worker counting
// every source gives: the same count and the same exactness.
TEST(SourceSketch, any_split_merged_in_any_order_equals_one_sketch_of_all) {
    std::mt19937 rng(7);
    for (const uint32_t n : {3u, 20u, 21u, 40u, 700u, 30000u}) {
        SourceSketch whole;
        std::vector<uint32_t> order(n);
        for (uint32_t i = 0; i < n; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), rng);
        for (uint32_t i : order) whole.add(source(i));
        for (int trial = 0; trial < 5; ++trial) {
            // Three workers, a source on one of them (sharding) or, here, sometimes on two.
            SourceSketch part[3];
            std::shuffle(order.begin(), order.end(), rng);
            for (uint32_t i : order) {
                part[rng() % 3].add(source(i));
                if (rng() % 10 == 0) part[rng() % 3].add(source(i));
            }
            int perm[3] = {0, 1, 2};
            std::shuffle(perm, perm + 3, rng);
            SourceSketch merged = part[perm[0]];
            merged.merge(part[perm[1]]);
            merged.merge(part[perm[2]]);
            EXPECT_EQ(merged.count(), whole.count()) << n;
            EXPECT_EQ(merged.exact(), whole.exact()) << n;
        }
    }
}

double relative_error(std::mt19937& rng, uint32_t n) {
    SourceSketch s;
    const uint32_t base = rng();
    for (uint32_t i = 0; i < n; ++i) s.add(SourceSketch::hash(proto::IpAddress::v4(base + i)));
    return (static_cast<double>(s.count()) - n) / n;
}

// The stated bound: a relative standard error of 1.04 / sqrt(256) = 6.5%, so 99.7% of
// estimates within 20%. Measured over many random source sets at each size from the
// first estimate (21 sources) on.
TEST(SourceSketch, the_estimate_is_within_the_stated_bound) {
    std::mt19937 rng(11);
    int estimates = 0, outside = 0;
    for (const uint32_t n : {21u, 60u, 300u, 640u, 1500u, 8000u, 100000u}) {
        const int trials = n <= 8000 ? 300 : 40;
        double squares = 0;
        for (int t = 0; t < trials; ++t) {
            const double error = relative_error(rng, n);
            squares += error * error;
            outside += std::fabs(error) > 0.2;
        }
        estimates += trials;
        EXPECT_LE(std::sqrt(squares / trials), 0.08) << n;  // the standard error, with room
    }
    EXPECT_LE(outside, estimates / 200) << "of " << estimates;
}

// Five-bit registers hold ranks up to 31: no register saturates below 2^30 sources, so a
// million sources are estimated without the downward bias of saturated registers.
TEST(SourceSketch, a_million_sources_are_not_underestimated) {
    std::mt19937 rng(13);
    double sum = 0;
    constexpr int kTrials = 8;
    for (int t = 0; t < kTrials; ++t) sum += relative_error(rng, 1'000'000);
    EXPECT_NEAR(sum / kTrials, 0.0, 0.06);  // 2.6 standard errors of a mean of 8
}

}  // namespace
}  // namespace insert::test
