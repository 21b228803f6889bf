// The telemetry pipeline around any packet source: one engine, one record ring and one
// worker lcore per source queue, and the exporter thread. Replay (FileSource) and the live
// modes (ethdev queues) differ only in the PacketSource they hand in.
//
//   source.run() on the main lcore --queues--> worker lcores (parse, Engine)
//        --record rings--> exporter thread (RecordWriter, HumanSummary)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/export/human_summary.hpp"
#include "dataplane/export/record_writer.hpp"
#include "dataplane/pipeline/exporter.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/pipeline/record_ring.hpp"
#include "dataplane/pipeline/worker.hpp"
#include "dataplane/state/engine.hpp"

namespace insert::pipeline {

// How engines are made, one per worker in order: state::Engine::create in replay; the live
// modes wrap each worker's record sink first (QpBoards::factory), benchmarks may hand in
// another engine.
using EngineFactory = std::function<std::unique_ptr<state::Engine>(
    const state::EngineConfig&, state::RecordSink&, std::string&)>;

struct PipelineConfig {
    state::EngineConfig engine;
    WorkerConfig worker;
    EngineFactory make_engine = nullptr;  // required
    unsigned record_ring_size = 4096;     // records per worker ring (power of two)
    FullPolicy full_policy = FullPolicy::wait;
    ExporterConfig exporter;
};

class Pipeline {
  public:
    // One worker per source queue; needs that many EAL worker lcores. nullptr and `error`
    // (one line) when memory or lcores are missing.
    static std::unique_ptr<Pipeline> create(const PipelineConfig& config, PacketSource& source,
                                            const MbufTimestamp& timestamp, std::string& error);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Starts the exporter thread and the workers on the EAL worker lcores.
    bool launch(std::string& error);
    // After source.run() returned: waits for every worker (each drains its queue and
    // finishes its engine on its lcore), then lets the exporter drain every ring.
    void wait();

    unsigned workers() const { return static_cast<unsigned>(contexts_.size()); }
    const WorkerContext& worker(unsigned i) const { return *contexts_[i]; }
    const state::Engine& engine(unsigned i) const { return *engines_[i]; }
    Exporter& exporter() { return *exporter_; }

    // Counters summed over the workers and engines, for the `summary` record.
    exporter::SummaryCounts totals(double wall_s) const;
    // Balance and limits for the terminal summary.
    exporter::RunInfo run_info() const;

  private:
    Pipeline() = default;
    std::vector<std::unique_ptr<RecordRing>> rings_;
    std::vector<std::unique_ptr<state::Engine>> engines_;
    std::vector<std::unique_ptr<WorkerContext>> contexts_;
    std::vector<unsigned> lcores_;
    std::unique_ptr<Exporter> exporter_;
    PacketSource* source_ = nullptr;
    bool launched_ = false;
    unsigned started_ = 0;  // workers launched
};

}  // namespace insert::pipeline
