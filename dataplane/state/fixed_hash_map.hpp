// Fixed-capacity open-addressing hash map (common/linear_probing.hpp) for the per-worker
// tables. All memory is reserved once at construction; insert/find/erase
// never allocate. Keys are compared in full (never a bare hash), and a full table refuses
// inserts beyond its capacity, so callers count the refusal.
//
// A growing map (`initial` > 0) reserves the same address space but probes only a
// power-of-two prefix of it, about twice the entries it holds, and doubles that prefix
// (rehashing in place, through a spare area) when it is half full. Random keys touch
// every page of the slots they probe: a fixed map for a million endpoints has the kernel
// zero-fill all of its slots even for a capture of a thousand, which was a fifth of a
// replay's CPU time. Growing costs an O(size) pause at each doubling, so live ports, where
// a pause means drops, use fixed maps.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dataplane/common/hash.hpp"
#include "dataplane/common/linear_probing.hpp"
#include "dataplane/state/lazy_array.hpp"

namespace insert::state {

template <typename Key, typename Value, typename Hash>
class FixedHashMap {
  public:
    // Holds up to `capacity` entries at a load factor of at most 1/2. With `initial` > 0
    // it starts with room for about `initial` entries and grows up to that.
    explicit FixedHashMap(std::size_t capacity, std::size_t initial = 0)
        : max_mask_(slots_for(capacity) - 1),
          mask_(initial == 0 ? max_mask_ : std::min(max_mask_, slots_for(initial) - 1)),
          limit_(capacity),
          grow_at_(mask_ == max_mask_ ? SIZE_MAX : (mask_ + 1) / 2),
          slots_(max_mask_ + 1),
          spare_(mask_ == max_mask_ ? 0 : (max_mask_ + 1) / 4) {}

    bool valid() const { return slots_.valid() && (grow_at_ == SIZE_MAX || spare_.valid()); }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return limit_; }
    // The slots probed now (the whole table unless it is still growing).
    std::size_t slot_count() const { return mask_ + 1; }
    // Reserved bytes: what the map holds at capacity.
    std::size_t memory_bytes() const { return (max_mask_ + 1) * sizeof(Slot); }
    // What a map for `capacity` entries reserves, before making one (its spare area too
    // when it grows).
    static std::size_t memory_bytes_for(std::size_t capacity, bool growing) {
        const std::size_t slots = slots_for(capacity);
        return (slots + (growing ? slots / 4 : 0)) * sizeof(Slot);
    }

    static uint64_t hash(const Key& key) { return Hash{}(key); }
    // The slot a lookup of a key with this hash reads first (the hot path prefetches it).
    // Slots over 32 bytes (host pairs: 52) may straddle two lines, the second holding
    // `used`, which every probe reads: both lines then.
    [[gnu::always_inline]] void prefetch(uint64_t hash) const {
        const char* slot = reinterpret_cast<const char*>(&slots_[hash & mask_]);
        __builtin_prefetch(slot);
        if constexpr (sizeof(Slot) > 32) __builtin_prefetch(slot + sizeof(Slot) - 1);
    }

    Value* find(const Key& key) { return find(key, hash(key)); }
    Value* find(const Key& key, uint64_t hash) {
        return common::probe_then(
            slots_.get(), mask_, hash, used, [&key](const Slot& s) { return s.key == key; },
            [](Slot* s) { return &s->value; }, [](Slot*) -> Value* { return nullptr; });
    }
    const Value* find(const Key& key) const { return const_cast<FixedHashMap*>(this)->find(key); }

    // Inserts `key` with `value` if absent. Returns the value slot (existing or new), or
    // null if the key is absent and the table is full.
    Value* insert(const Key& key, const Value& value, bool* inserted = nullptr) {
        return insert(key, hash(key), value, inserted);
    }
    Value* insert(const Key& key, uint64_t hash, const Value& value, bool* inserted = nullptr) {
        const common::Probe<Slot> p = probe(key, hash);
        Slot& s = *p.slot;
        if (p.found) {
            if (inserted) *inserted = false;
            return &s.value;
        }
        if (size_ >= limit_) return nullptr;
        if (size_ >= grow_at_) {
            grow();
            return insert(key, hash, value, inserted);
        }
        s.used = true;
        s.key = key;
        s.value = value;
        ++size_;
        if (inserted) *inserted = true;
        return &s.value;
    }

    bool erase(const Key& key) {
        const common::Probe<Slot> p = probe(key, Hash{}(key));
        if (!p.found) return false;
        common::erase_at(
            slots_.get(), mask_, static_cast<std::size_t>(p.slot - slots_.get()), used,
            [](const Slot& s) { return Hash{}(s.key); }, [](Slot& s) { s.used = false; });
        --size_;
        return true;
    }

  private:
    static std::size_t slots_for(std::size_t entries) {
        return std::bit_ceil(entries < 8 ? std::size_t{16} : entries * 2);
    }

    // Doubles the probed prefix: the entries move to the spare area, the old prefix is
    // cleared, and each entry is placed again under the wider mask. Rare (a few times per
    // run) and outside any lookup, so no caller holds a slot pointer across it.
    void grow() {
        const std::size_t old_slots = mask_ + 1;
        Slot* spare = spare_.get();
        std::size_t n = 0;
        for (std::size_t i = 0; i < old_slots; ++i)
            if (slots_[i].used) spare[n++] = slots_[i];
        std::memset(static_cast<void*>(slots_.get()), 0, old_slots * sizeof(Slot));
        mask_ = mask_ * 2 + 1;
        grow_at_ = mask_ == max_mask_ ? SIZE_MAX : (mask_ + 1) / 2;
        for (std::size_t e = 0; e < n; ++e)
            *common::probe(slots_.get(), mask_, Hash{}(spare[e].key), used, [](const Slot&) {
                 return false;
             }).slot = spare[e];
        spare_.discard();  // the spare area holds nothing between doublings
    }

    struct SlotFields {
        Key key{};
        Value value{};
        bool used = false;
    };
    // Small slots are padded to 32 bytes so that none straddles two cache lines: a lookup
    // then costs one line, the one prefetch() fetched.
    static constexpr std::size_t kSlotAlign = sizeof(SlotFields) <= 32 ? 32 : alignof(SlotFields);
    struct alignas(kSlotAlign) Slot : SlotFields {};
    static bool used(const Slot& s) { return s.used; }
    [[gnu::always_inline]] common::Probe<Slot> probe(const Key& key, uint64_t hash) {
        return common::probe(slots_.get(), mask_, hash, used,
                             [&key](const Slot& s) { return s.key == key; });
    }
    std::size_t max_mask_;
    std::size_t mask_;
    std::size_t limit_;
    std::size_t grow_at_;  // size that triggers the next doubling (SIZE_MAX: fully grown)
    std::size_t size_ = 0;
    // All-zero bytes are an empty slot: keys and values must be trivial types.
    static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>);
    LazyArray<Slot> slots_;
    // Holds the entries while the map doubles: at most a quarter of the full table, since
    // the last doubling starts when half the half-size table is in use.
    LazyArray<Slot> spare_;
};

using common::mix64;

}  // namespace insert::state
