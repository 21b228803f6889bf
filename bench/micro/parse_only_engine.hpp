// An engine that keeps no state: it counts the packets handed to it and nothing else.
// `insert-pipeline-bench --engine none` runs the pipeline with it, so that the rate it
// reports is what the rest of the packet path allows - the source's mbufs, the worker's
// loop and the parser - and the difference to the real engine's rate is the engine's cost
// per packet (docs/performance.md, "What the engine costs").
#pragma once

#include <memory>
#include <string>

#include "dataplane/state/engine.hpp"

namespace insert::bench {

class ParseOnlyEngine final : public state::Engine {
  public:
    // An EngineFactory (pipeline/pipeline.hpp).
    static std::unique_ptr<state::Engine> create(const state::EngineConfig&, state::RecordSink&,
                                                 std::string&) {
        return std::make_unique<ParseOnlyEngine>();
    }

    void process_burst(const proto::ParsedPacket*, const uint64_t*, unsigned n) noexcept override {
        // Single writer, as the real engine's counters.
        counters_.packets.store(counters_.packets.load(std::memory_order_relaxed) + n,
                                std::memory_order_relaxed);
    }
    void tick(uint64_t) noexcept override {}
    void close_windows(uint64_t) noexcept override {}
    void report(uint64_t) override {}
    bool advance_report() noexcept override { return false; }
    void finish(uint64_t) override {}
    const state::EngineCounters& counters() const override { return counters_; }
    std::size_t bytes_per_endpoint() const override { return 0; }

  private:
    state::EngineCounters counters_;
};

}  // namespace insert::bench
