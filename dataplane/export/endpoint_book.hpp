// What the exporter keeps per endpoint: its message latencies, for the `qp` records'
// percentiles, and where its held final `qp` record is. Workers do not keep latency
// histograms (they would cost kilobytes per endpoint on the hot path); the exporter sees
// every `msg` record of an endpoint before that endpoint's `qp` record (one FIFO ring per
// worker, and an endpoint lives on one worker), so it can compute them here.
//
// The exporter looks an endpoint up for every acknowledged message and every `qp` record:
// with 100k endpoints a node-based map cost it two or three cache misses per record (15%
// of a replay). Here the index is a flat open-addressing table of 32-byte slots that the
// exporter prefetches a few records ahead (prefetch(), then prefetch_entry()), and the
// entries live in fixed chunks, so they never move and a pointer to one stays valid.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/export/chunked_array.hpp"
#include "dataplane/export/latency_histogram.hpp"
#include "dataplane/state/endpoint_key.hpp"

namespace insert::exporter {

using state::EndpointKey;
using state::EndpointKeyHash;

class EndpointBook {
  public:
    static constexpr uint32_t kNoFinal = UINT32_MAX;
    // Two cache lines exactly (prefetch_entry_at fetches both): unaligned, an entry
    // straddled three and the third was a miss on every latency sample.
    struct alignas(64) Entry {
        LatencyHistogram latency;
        uint32_t final_record = kNoFinal;  // the writer's held final qp record, if any
    };

    EndpointBook() : slots_(kInitialSlots) {}

    // The entry of `endpoint`, created empty when absent.
    Entry& entry(const EndpointKey& endpoint);
    // Null when the endpoint has no entry.
    const Entry* find(const EndpointKey& endpoint) const;
    // Starts loading the slot that entry()/find() of `endpoint` will read first.
    // always_inline: GCC deems a function whose only effect is a prefetch free of side
    // effects (ipa-pure-const) and deletes calls to it when it is not inlined - this one
    // was, and the exporter missed the cache on every lookup.
    [[gnu::always_inline]] void prefetch(const EndpointKey& endpoint) const {
        __builtin_prefetch(&slots_[EndpointKeyHash{}(endpoint) & (slots_.size() - 1)]);
    }
    // Second stage, once the slot is cached: starts loading the entry the slot names.
    [[gnu::always_inline]] void prefetch_entry(const EndpointKey& endpoint) const {
        const Slot& s = slots_[probe(endpoint)];
        if (s.index != kEmpty) prefetch_entry_at(&entries_[s.index]);
    }
    [[gnu::always_inline]] static void prefetch_entry_at(const Entry* e) {
        const char* p = reinterpret_cast<const char*>(e);
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
    }
    std::size_t size() const { return entries_.size(); }

  private:
    static constexpr std::size_t kInitialSlots = 1024;  // a power of two
    static constexpr uint32_t kEmpty = UINT32_MAX;
    struct alignas(32) Slot {
        EndpointKey key;
        uint32_t index = kEmpty;  // into entries_
    };
    // The slot holding `endpoint`, or the empty slot where it would go.
    std::size_t probe(const EndpointKey& endpoint) const;
    void grow();

    std::vector<Slot> slots_;  // load factor <= 1/2
    ChunkedArray<Entry> entries_;
    static_assert(sizeof(Entry) == 128);
};

}  // namespace insert::exporter
