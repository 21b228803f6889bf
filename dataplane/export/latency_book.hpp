// Per-endpoint message latencies for the `qp` records' percentiles. Workers do not keep
// latency histograms (they would cost kilobytes per endpoint on the hot path); the exporter
// sees every `msg` record of an endpoint before that endpoint's `qp` record (one FIFO ring
// per worker, and an endpoint lives on one worker), so it can compute them here.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "dataplane/export/latency_histogram.hpp"
#include "dataplane/state/endpoint_key.hpp"

namespace insert::exporter {

using state::EndpointKey;
using state::EndpointKeyHash;

class LatencyBook {
  public:
    void add(const EndpointKey& endpoint, uint64_t latency_ns) { book_[endpoint].add(latency_ns); }
    // Null when the endpoint has no latency yet.
    const LatencyHistogram* find(const EndpointKey& endpoint) const {
        auto it = book_.find(endpoint);
        return it == book_.end() ? nullptr : &it->second;
    }

  private:
    std::unordered_map<EndpointKey, LatencyHistogram, EndpointKeyHash> book_;
};

}  // namespace insert::exporter
