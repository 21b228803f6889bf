// Open addressing with linear probing over a power-of-two array of slots, and deletion by
// backward shift: the later entries of a probe run move into the hole, so that lookups need
// no tombstones and a table that lives for months does not silt up. One implementation
// behind INSERT's three tables, which differ only in where their slots live and how they
// grow: the state engine's FixedHashMap (reserved once, lockable, refuses when full: the
// packet path never allocates), the exporter's EndpointBook and insert-gen's FlatMap
// (unbounded, on the heap, doubled when half full).
//
// A table passes its slot array, `mask` (slots - 1), where a key's probe starts (its hash,
// masked here), and how to read a slot: `used(slot)` (it holds an entry), `matches(slot)`
// (it holds the key looked for), `start_of(slot)` (where its own entry's probe starts).
#pragma once

#include <cstddef>
#include <cstdint>

namespace insert::common {

template <typename Slot>
struct Probe {
    Slot* slot;  // holding the key, or the empty slot where it would go
    bool found;
};

// Walks the key's probe run and returns found(slot) at the slot holding the key, or
// empty(slot) at the empty slot that ends the run (where the key would go). The table must
// never be full (load factor below 1). Each exit returns its own continuation's value, so
// the packet path's lookups compile to the hand-written loop (no flag to test after it:
// that cost the state engine 3 instructions a frame, scripts/count-instructions.sh).
template <typename Slot, typename Used, typename Matches, typename Found, typename Empty>
[[gnu::always_inline]] inline auto probe_then(Slot* slots, std::size_t mask, uint64_t start,
                                              Used used, Matches matches, Found found,
                                              Empty empty) {
    for (std::size_t i = start & mask;; i = (i + 1) & mask) {
        Slot* s = slots + i;
        if (!used(*s)) return empty(s);
        if (matches(*s)) return found(s);
    }
}

// The same, as the slot and whether it holds the key.
template <typename Slot, typename Used, typename Matches>
[[gnu::always_inline]] inline Probe<Slot> probe(Slot* slots, std::size_t mask, uint64_t start,
                                                Used used, Matches matches) {
    return probe_then(
        slots, mask, start, used, matches,
        [](Slot* s) {
            return Probe<Slot>{s, true};
        },
        [](Slot* s) {
            return Probe<Slot>{s, false};
        });
}

// Empties used slot `i` by backward shift; `clear(slot)` makes a slot empty.
template <typename Slot, typename Used, typename StartOf, typename Clear>
void erase_at(Slot* slots, std::size_t mask, std::size_t i, Used used, StartOf start_of,
              Clear clear) {
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask; used(slots[j]); j = (j + 1) & mask) {
        // The entry at j may fill the hole unless its probe starts after the hole (within
        // the run, cyclically): it would then no longer be found from its start.
        const std::size_t home = start_of(slots[j]) & mask;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            slots[hole] = slots[j];
            hole = j;
        }
    }
    clear(slots[hole]);
}

}  // namespace insert::common
