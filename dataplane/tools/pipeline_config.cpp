#include "dataplane/tools/pipeline_config.hpp"

#include <algorithm>

namespace insert::tools {

uint64_t tick_ns_for(uint64_t idle_timeout_ns) {
    if (idle_timeout_ns == 0) return 0;
    return std::max<uint64_t>(idle_timeout_ns / 8, 1);
}

pipeline::PipelineConfig pipeline_config_from(const PipelineOptions& options) {
    pipeline::PipelineConfig config;
    config.engine.max_endpoints = options.endpoints_per_worker;
    config.engine.idle_timeout_ns = static_cast<uint64_t>(options.idle_timeout_s * 1e9);
    config.worker.interval_ns = static_cast<uint64_t>(options.interval_s * 1e9);
    config.worker.tick_ns = tick_ns_for(config.engine.idle_timeout_ns);
    config.record_ring_size = options.record_ring;
    config.full_policy = options.full_policy;
    config.exporter.records = options.records;
    config.exporter.cpus = options.cpus;
    return config;
}

}  // namespace insert::tools
