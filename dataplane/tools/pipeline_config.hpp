// The pipeline configuration the insert-dp commands share, from the options they have in
// common: one function, so that replay, the live modes and bench cannot drift apart (the
// tick period once did). Each command sets on the result only what is its own - replay:
// growing tables, the held split evictions, the progress line; inline and monitor: the
// poll backoff and bounded memory; every command: its engine factory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "dataplane/pipeline/pipeline.hpp"

namespace insert::tools {

struct PipelineOptions {
    uint32_t endpoints_per_worker = 0;  // each worker's engine's capacity
    double idle_timeout_s = 0;          // evict endpoints idle this long; 0: never
    double interval_s = 0;              // periodic qp records; 0: none
    unsigned record_ring = 4096;        // records per worker ring (a power of two)
    pipeline::FullPolicy full_policy = pipeline::FullPolicy::wait;
    std::FILE* records = nullptr;  // JSON Lines destination known now, or null
    std::vector<unsigned> cpus;    // the exporter thread's CPUs (empty: inherit)
};

// Idle-eviction housekeeping (Engine::tick) eight times per timeout, so that eviction lags
// idleness by at most 1/8 (the engine's deadline wheel has the same granularity); at least
// 1 ns. Without a timeout there is nothing to evict: 0, which workers and exporter read
// as "no housekeeping" (a 1 ns period would cut every burst at every new timestamp for a
// tick that does nothing).
uint64_t tick_ns_for(uint64_t idle_timeout_ns);

pipeline::PipelineConfig pipeline_config_from(const PipelineOptions& options);

}  // namespace insert::tools
