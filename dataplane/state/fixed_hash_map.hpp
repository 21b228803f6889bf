// Fixed-capacity open-addressing hash map (linear probing, backward-shift deletion) for
// the per-worker tables. All memory is allocated once at construction; insert/find/erase
// never allocate. Keys are compared in full (never a bare hash), and a full table refuses
// inserts instead of growing, so callers count the refusal.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dataplane/state/lazy_array.hpp"

namespace insert::state {

template <typename Key, typename Value, typename Hash>
class FixedHashMap {
  public:
    // Holds up to `capacity` entries at a load factor of at most 1/2.
    explicit FixedHashMap(std::size_t capacity)
        : mask_(std::bit_ceil(capacity < 8 ? std::size_t{16} : capacity * 2) - 1),
          limit_(capacity),
          slots_(mask_ + 1) {}

    bool valid() const { return slots_.valid(); }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return limit_; }
    std::size_t memory_bytes() const { return (mask_ + 1) * sizeof(Slot); }

    static uint64_t hash(const Key& key) { return Hash{}(key); }
    // The slot a lookup of a key with this hash reads first (the hot path prefetches it).
    void prefetch(uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }

    Value* find(const Key& key) { return find(key, hash(key)); }
    Value* find(const Key& key, uint64_t hash) {
        for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (!s.used) return nullptr;
            if (s.key == key) return &s.value;
        }
    }
    const Value* find(const Key& key) const { return const_cast<FixedHashMap*>(this)->find(key); }

    // Inserts `key` with `value` if absent. Returns the value slot (existing or new), or
    // null if the key is absent and the table is full.
    Value* insert(const Key& key, const Value& value, bool* inserted = nullptr) {
        return insert(key, hash(key), value, inserted);
    }
    Value* insert(const Key& key, uint64_t hash, const Value& value, bool* inserted = nullptr) {
        for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
            Slot& s = slots_[i];
            if (s.used && s.key == key) {
                if (inserted) *inserted = false;
                return &s.value;
            }
            if (!s.used) {
                if (size_ >= limit_) return nullptr;
                s.used = true;
                s.key = key;
                s.value = value;
                ++size_;
                if (inserted) *inserted = true;
                return &s.value;
            }
        }
    }

    bool erase(const Key& key) {
        std::size_t i = Hash{}(key)&mask_;
        for (;; i = (i + 1) & mask_) {
            if (!slots_[i].used) return false;
            if (slots_[i].key == key) break;
        }
        // Backward shift: pull later entries of the probe run into the hole so that
        // lookups never need tombstones.
        std::size_t hole = i;
        for (std::size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
            const std::size_t home = Hash{}(slots_[j].key) & mask_;
            const bool movable = ((j - home) & mask_) >= ((j - hole) & mask_);
            if (movable) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole].used = false;
        --size_;
        return true;
    }

  private:
    struct SlotFields {
        Key key{};
        Value value{};
        bool used = false;
    };
    // Small slots are padded to 32 bytes so that none straddles two cache lines: a lookup
    // then costs one line, the one prefetch() fetched.
    static constexpr std::size_t kSlotAlign = sizeof(SlotFields) <= 32 ? 32 : alignof(SlotFields);
    struct alignas(kSlotAlign) Slot : SlotFields {};
    std::size_t mask_;
    std::size_t limit_;
    std::size_t size_ = 0;
    // All-zero bytes are an empty slot: keys and values must be trivial types.
    static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>);
    LazyArray<Slot> slots_;
};

// 64-bit mix (splitmix64 finaliser) used by every key hash of the state layer.
constexpr uint64_t mix64(uint64_t h) {
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

}  // namespace insert::state
