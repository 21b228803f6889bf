// Per-endpoint message latencies for the `qp` records' percentiles. Workers do not keep
// latency histograms (they would cost kilobytes per endpoint on the hot path); the exporter
// sees every `msg` record of an endpoint before that endpoint's `qp` record (one FIFO ring
// per worker, and an endpoint lives on one worker), so it can compute them here.
//
// The exporter looks an endpoint up for every acknowledged message: with 100k endpoints a
// node-based map cost it two or three cache misses per record (15% of a replay). Here the
// index is a flat open-addressing table of 32-byte slots that the exporter prefetches a few
// records ahead (prefetch(), then prefetch_histogram()), and the histograms live in one array.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/export/latency_histogram.hpp"
#include "dataplane/state/endpoint_key.hpp"

namespace insert::exporter {

using state::EndpointKey;
using state::EndpointKeyHash;

class LatencyBook {
  public:
    LatencyBook() : slots_(kInitialSlots) {}

    void add(const EndpointKey& endpoint, uint64_t latency_ns);
    // Null when the endpoint has no latency yet. Valid until the next add().
    const LatencyHistogram* find(const EndpointKey& endpoint) const;
    // Starts loading the slot that add()/find() of `endpoint` will read first.
    // always_inline: GCC deems a function whose only effect is a prefetch free of side
    // effects (ipa-pure-const) and deletes calls to it when it is not inlined - this one
    // was, and the exporter missed the cache on every lookup.
    [[gnu::always_inline]] void prefetch(const EndpointKey& endpoint) const {
        __builtin_prefetch(&slots_[EndpointKeyHash{}(endpoint) & (slots_.size() - 1)]);
    }
    // Second stage, once the slot is cached: starts loading the endpoint's histogram.
    [[gnu::always_inline]] void prefetch_histogram(const EndpointKey& endpoint) const {
        const Slot& s = slots_[probe(endpoint)];
        if (s.index != kEmpty) {
            const char* h = reinterpret_cast<const char*>(&histogram(s.index));
            __builtin_prefetch(h);
            __builtin_prefetch(h + 64);
        }
    }
    std::size_t size() const { return count_; }

  private:
    static constexpr std::size_t kInitialSlots = 1024;  // a power of two
    static constexpr uint32_t kEmpty = UINT32_MAX;
    struct alignas(32) Slot {
        EndpointKey key;
        uint32_t index = kEmpty;  // histogram(index)
    };
    // The slot holding `endpoint`, or the empty slot where it would go.
    std::size_t probe(const EndpointKey& endpoint) const;
    void grow();

    // Histograms live in fixed chunks, so that adding one never moves the others (a
    // growing vector moved every histogram, and its sample vector, at each doubling).
    static constexpr unsigned kChunkBits = 12;
    LatencyHistogram& histogram(uint32_t i) const {
        return chunks_[i >> kChunkBits][i & ((1u << kChunkBits) - 1)];
    }

    std::vector<Slot> slots_;  // load factor <= 1/2
    std::vector<std::unique_ptr<LatencyHistogram[]>> chunks_;
    uint32_t count_ = 0;  // histograms in use
};

}  // namespace insert::exporter
