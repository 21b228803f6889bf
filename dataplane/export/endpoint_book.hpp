// What the exporter keeps per endpoint: the message latencies of each of its parts (one per
// source IP, docs/semantics.md "Sources"), for the `qp` records' percentiles, and where its
// held final `qp` record is. Workers do not keep latency histograms (they would cost
// kilobytes per endpoint on the hot path); the exporter sees every `msg` record of a part
// before that part's `qp` record (one FIFO ring per worker, and a part lives on one worker),
// so it can compute them here. A part's latencies go when the part is evicted, so that an
// appliance running for months holds only what its live endpoints need.
//
// The exporter looks an endpoint up for every acknowledged message and every `qp` record:
// with 100k endpoints a node-based map cost it two or three cache misses per record (15%
// of a replay). Here the index is a flat open-addressing table (common/linear_probing.hpp)
// of 32-byte slots that the exporter prefetches a few records ahead (prefetch(), then
// prefetch_entry()), and the entries live in fixed chunks, so they never move and a
// pointer to one stays valid.
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
    static constexpr uint32_t kNone = UINT32_MAX;
    // One part of an endpoint: the latencies of the messages it received from `src`. Three
    // cache lines exactly (prefetch_entry_at fetches them): unaligned, an entry straddled
    // one more and it was a miss on every latency sample.
    struct alignas(64) Entry {
        LatencyHistogram latency;
        proto::IpAddress src;
        uint32_t next = kNone;  // the endpoint's next part
    };

    EndpointBook() : slots_(kInitialSlots) {}

    // The entry of the part of `endpoint` from `src`, created empty when absent.
    Entry& part(const EndpointKey& endpoint, const proto::IpAddress& src);
    // Null when the part has no entry.
    const Entry* find_part(const EndpointKey& endpoint, const proto::IpAddress& src) const;
    // Forgets a part's latencies; the endpoint goes with its last part unless it holds a
    // final record.
    void erase_part(const EndpointKey& endpoint, const proto::IpAddress& src);
    // The endpoint's first part entry (kNone if none), for walking them through Entry::next.
    uint32_t first_part(const EndpointKey& endpoint) const;
    const Entry& entry_at(uint32_t i) const { return entries_[i]; }

    // The writer's held final record of `endpoint` (kNoFinal if none); the reference stays
    // valid until the next call that adds or removes an endpoint.
    uint32_t& final_record(const EndpointKey& endpoint);
    uint32_t final_record_of(const EndpointKey& endpoint) const;

    // Starts loading the slot that lookups of `endpoint` will read first.
    // always_inline: GCC deems a function whose only effect is a prefetch free of side
    // effects (ipa-pure-const) and deletes calls to it when it is not inlined - this one
    // was, and the exporter missed the cache on every lookup.
    [[gnu::always_inline]] void prefetch(const EndpointKey& endpoint) const {
        __builtin_prefetch(&slots_[EndpointKeyHash{}(endpoint) & (slots_.size() - 1)]);
    }
    // Second stage, once the slot is cached: starts loading the endpoint's first part.
    [[gnu::always_inline]] void prefetch_entry(const EndpointKey& endpoint) const {
        const Slot& s = slots_[probe(endpoint)];
        if (s.key == endpoint && s.first != kNone) prefetch_entry_at(&entries_[s.first]);
    }
    [[gnu::always_inline]] static void prefetch_entry_at(const Entry* e) {
        const char* p = reinterpret_cast<const char*>(e);
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
        __builtin_prefetch(p + 128);
    }
    // Endpoints held (with a part or a final record).
    std::size_t size() const { return used_; }
    // Part entries held.
    std::size_t parts() const { return entries_.size() - free_.size(); }

  private:
    static constexpr std::size_t kInitialSlots = 1024;  // a power of two
    struct alignas(32) Slot {
        EndpointKey key;
        uint32_t first = kNone;  // first part entry
        uint32_t final_record = kNoFinal;
        bool used = false;
    };
    static bool used(const Slot& s) { return s.used; }
    // The slot holding `endpoint`, or the empty slot where it would go.
    std::size_t probe(const EndpointKey& endpoint) const;
    std::size_t slot_for(const EndpointKey& endpoint);  // created when absent
    void erase_slot(std::size_t i);
    void grow();
    uint32_t new_entry();

    std::vector<Slot> slots_;  // load factor <= 1/2
    std::size_t used_ = 0;
    ChunkedArray<Entry> entries_;
    std::vector<uint32_t> free_;  // erased entries, reused first
    static_assert(sizeof(Entry) == 192);
    static_assert(sizeof(Slot) == 32);
};

}  // namespace insert::exporter
