// sort_runs against std::sort: any number of ascending runs, merged or handed to the
// general sort, gives the sorted order.
#include "correlator/join/run_sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace insert::correlate {
namespace {

using Item = std::pair<int, int>;  // (key, index): a total order, as the callers' are

std::vector<Item> with_runs(std::mt19937& rng, std::size_t n, std::size_t runs) {
    std::vector<Item> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = {static_cast<int>(rng() % 1000), static_cast<int>(i)};
    // Cut into `runs` pieces at random and sort each: that many ascending runs (or fewer).
    std::vector<std::size_t> cuts{0, n};
    for (std::size_t r = 1; r < runs; ++r) cuts.push_back(rng() % (n + 1));
    std::sort(cuts.begin(), cuts.end());
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c)
        std::sort(v.begin() + static_cast<long>(cuts[c]),
                  v.begin() + static_cast<long>(cuts[c + 1]));
    return v;
}

TEST(RunSort, sorts_any_number_of_runs_as_std_sort_does) {
    std::mt19937 rng(20261203);
    for (const std::size_t n : {0u, 1u, 2u, 63u, 64u, 1000u, 100000u}) {
        for (const std::size_t runs : {1u, 2u, 3u, 7u, 64u, 1000u, 50000u}) {
            std::vector<Item> v = with_runs(rng, n, runs);
            std::vector<Item> expected = v;
            std::sort(expected.begin(), expected.end());
            sort_runs(v, std::less<Item>());
            EXPECT_EQ(v, expected) << n << " items, " << runs << " runs";
        }
    }
    std::vector<Item> reversed(5000);
    for (int i = 0; i < 5000; ++i) reversed[static_cast<std::size_t>(i)] = {5000 - i, i};
    std::vector<Item> expected = reversed;
    std::sort(expected.begin(), expected.end());
    sort_runs(reversed, std::less<Item>());  // every item a run: the general sort
    EXPECT_EQ(reversed, expected);
}

// A part of an array (the host model sorts each process's records in place): sorted as
// std::sort sorts it, and nothing outside the part touched.
TEST(RunSort, sorts_a_part_of_an_array_in_place) {
    std::mt19937 rng(20261204);
    for (const std::size_t n : {0u, 1u, 64u, 1000u, 100000u}) {
        for (const std::size_t runs : {1u, 2u, 7u, 1000u, 50000u}) {
            std::vector<Item> part = with_runs(rng, n, runs);
            std::vector<Item> v(3, Item{-1, -1});
            v.insert(v.begin() + 1, part.begin(), part.end());  // one guard before, two after
            std::sort(part.begin(), part.end());
            sort_runs(v.data() + 1, v.data() + 1 + n, std::less<Item>());
            EXPECT_EQ(std::vector<Item>(v.begin() + 1, v.begin() + 1 + static_cast<long>(n)), part)
                << n << " items, " << runs << " runs";
            EXPECT_EQ(v.front(), (Item{-1, -1}));
            EXPECT_EQ(v[n + 1], (Item{-1, -1}));
            EXPECT_EQ(v.back(), (Item{-1, -1}));
        }
    }
}

}  // namespace
}  // namespace insert::correlate
