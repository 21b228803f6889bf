// Per-QP lists for 10^5 QPs without 10^5 small vectors (e2e_truth.*): items are appended
// with their group, then regrouped once by a stable counting sort, so that each group's
// items lie together in the order they were appended. And a multimap from 64-bit keys to
// group numbers: one sorted array of values and a hash of where each key's run starts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "bench/gen/flat_map.hpp"
#include "bench/gen/huge_vector.hpp"

namespace insert::gen {

template <typename T>
class Grouped {
  public:
    void reserve(std::size_t n) {
        keys_.reserve(n);
        items_.reserve(n);
    }
    void add(uint32_t group, T item) {
        keys_.push_back(group);
        items_.push_back(std::move(item));
    }
    // After the last add(): `groups` groups, numbered 0..groups-1.
    void finish(std::size_t groups) {
        begin_.assign(groups + 1, 0);
        for (uint32_t k : keys_) ++begin_[k + 1];
        for (std::size_t g = 0; g < groups; ++g) begin_[g + 1] += begin_[g];
        HugeVector<T> sorted(items_.size());
        std::vector<uint32_t> at(begin_.begin(), begin_.end() - 1);
        for (std::size_t i = 0; i < items_.size(); ++i)
            sorted[at[keys_[i]]++] = std::move(items_[i]);
        items_ = std::move(sorted);
        keys_.clear();
        keys_.shrink_to_fit();
    }
    std::span<T> of(uint32_t g) { return {items_.data() + begin_[g], begin_[g + 1] - begin_[g]}; }
    std::span<const T> of(uint32_t g) const {
        return {items_.data() + begin_[g], begin_[g + 1] - begin_[g]};
    }

  private:
    // Hundreds of MB on `large`: on huge pages (huge_vector.hpp: fresh memory is slow here).
    HugeVector<uint32_t> keys_;
    HugeVector<T> items_;
    std::vector<uint32_t> begin_;
};

class KeyIndex {
  public:
    void add(uint64_t key, uint32_t value) { pairs_.emplace_back(key, value); }
    // After the last add(): values of a key in increasing order; a key's run is found by
    // one hash probe (a binary search over 10^5 keys was ~10 cache misses per lookup).
    void finish() {
        std::sort(pairs_.begin(), pairs_.end());
        values_.resize(pairs_.size());
        where_ = FlatMap<Run>(pairs_.size());
        for (std::size_t i = 0; i < pairs_.size(); ++i) {
            values_[i] = pairs_[i].second;
            auto [run, added] = where_.try_emplace(pairs_[i].first, {static_cast<uint32_t>(i), 0});
            ++run->count;
        }
        pairs_.clear();
        pairs_.shrink_to_fit();
    }
    std::span<const uint32_t> find(uint64_t key) const {
        const Run* run = where_.find(key);
        if (!run) return {};
        return {values_.data() + run->first, run->count};
    }

  private:
    struct Run {
        uint32_t first, count;
    };
    std::vector<std::pair<uint64_t, uint32_t>> pairs_;
    std::vector<uint32_t> values_;
    FlatMap<Run> where_;  // key -> its values
};

}  // namespace insert::gen
