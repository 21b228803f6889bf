// An open-addressing hash map from 64-bit keys to small trivially copyable values, for the
// truth observer's per-endpoint lookups. std::unordered_map allocated a node per key and
// cost a bucket load plus a dependent node load per lookup; with 100k endpoints both were
// cache misses (with the node allocations, ~7% of `large`'s CPU time). Here a lookup is one
// probe sequence in one flat array (common/linear_probing.hpp), usually a single cache
// line. Keys are never erased.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "dataplane/common/hash.hpp"
#include "dataplane/common/linear_probing.hpp"

#include "bench/gen/huge_vector.hpp"

namespace insert::gen {

template <typename V>
class FlatMap {
    static_assert(std::is_trivially_copyable_v<V>);

  public:
    // Reserved: no key may be all ones (the observer's keys leave their top bits zero).
    static constexpr uint64_t kEmptyKey = ~uint64_t{0};

    explicit FlatMap(std::size_t expected = 8) { rehash(capacity_for(expected)); }

    std::size_t size() const { return size_; }

    V* find(uint64_t key) {
        Slot& s = slots_[probe(key)];
        return s.key == key ? &s.value : nullptr;
    }
    const V* find(uint64_t key) const {
        const Slot& s = slots_[probe(key)];
        return s.key == key ? &s.value : nullptr;
    }
    bool contains(uint64_t key) const { return find(key) != nullptr; }

    // The value of `key`, and whether it was added (with `value`) by this call.
    std::pair<V*, bool> try_emplace(uint64_t key, const V& value) {
        std::size_t i = probe(key);
        if (slots_[i].key == key) return {&slots_[i].value, false};
        if ((size_ + 1) * 2 > slots_.size()) {  // at most half full: short probe sequences
            rehash(slots_.size() * 2);
            i = probe(key);
        }
        slots_[i] = Slot{key, value};
        ++size_;
        return {&slots_[i].value, true};
    }
    // The value of `key`, added as V{} if absent.
    V& operator[](uint64_t key) { return *try_emplace(key, V{}).first; }

    // A hint: `key` will be looked up soon.
    void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[home(key)]); }

  private:
    struct Slot {
        uint64_t key;
        V value;
    };

    static std::size_t capacity_for(std::size_t n) {
        std::size_t c = 16;
        while (c < n * 2) c *= 2;
        return c;
    }
    std::size_t home(uint64_t key) const {
        // Fibonacci hashing: the multiplication spreads the low bits (QPNs, ports) upward.
        return static_cast<std::size_t>((key * common::kGoldenRatio64) >> shift_);
    }
    // The slot holding `key`, or the empty slot where it would go.
    std::size_t probe(uint64_t key) const {
        const Slot* s = common::probe(
                            slots_.data(), slots_.size() - 1, home(key),
                            [](const Slot& slot) { return slot.key != kEmptyKey; },
                            [key](const Slot& slot) { return slot.key == key; })
                            .slot;
        return static_cast<std::size_t>(s - slots_.data());
    }
    void rehash(std::size_t capacity) {
        HugeVector<Slot> old(capacity, Slot{kEmptyKey, V{}});
        old.swap(slots_);
        shift_ = 64;
        for (std::size_t c = capacity; c > 1; c /= 2) --shift_;
        for (const Slot& s : old)
            if (s.key != kEmptyKey) slots_[probe(s.key)] = s;
    }

    HugeVector<Slot> slots_;
    std::size_t size_ = 0;
    unsigned shift_ = 64;
};

}  // namespace insert::gen
