#include "dataplane/pipeline/pipeline.hpp"

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <atomic>

#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/pipeline/dpdk_name.hpp"

namespace insert::pipeline {

std::unique_ptr<Pipeline> Pipeline::create(const PipelineConfig& config, PacketSource& source,
                                           const MbufTimestamp& timestamp, std::string& error) {
    if (config.make_engine == nullptr) {
        error = "pipeline: no engine factory";
        return nullptr;
    }
    const unsigned n = source.queues();
    const unsigned available = rte_lcore_count() > 0 ? rte_lcore_count() - 1 : 0;
    if (n == 0 || n > available) {
        error = "need " + std::to_string(n) + " worker lcores but EAL has " +
                std::to_string(available) + " besides the main lcore (check -l/--lcores)";
        return nullptr;
    }
    std::unique_ptr<Pipeline> p(new Pipeline());
    p->source_ = &source;
    std::vector<RecordRing*> rings;
    unsigned lcore = rte_get_next_lcore(-1, /*skip_main=*/1, /*wrap=*/0);
    for (unsigned w = 0; w < n; ++w, lcore = rte_get_next_lcore(lcore, 1, 0)) {
        auto ring = RecordRing::create(dpdk_name("rec", p.get(), w), config.record_ring_size,
                                       config.full_policy, error);
        if (!ring) return nullptr;
        auto engine = config.make_engine(config.engine, *ring, error);
        if (!engine) {
            error = "worker " + std::to_string(w) + ": " + error;
            return nullptr;
        }
        auto ctx = std::make_unique<WorkerContext>();
        ctx->index = w;
        ctx->source = &source;
        ctx->engine = engine.get();
        ctx->timestamp = timestamp;
        ctx->config = config.worker;
        rings.push_back(ring.get());
        p->rings_.push_back(std::move(ring));
        p->engines_.push_back(std::move(engine));
        p->contexts_.push_back(std::move(ctx));
        p->lcores_.push_back(lcore);
    }
    p->exporter_ = std::make_unique<Exporter>(config.exporter, std::move(rings), &source);
    return p;
}

Pipeline::~Pipeline() {
    if (launched_) wait();
}

bool Pipeline::launch(std::string& error) {
    exporter_->start();
    for (unsigned w = 0; w < contexts_.size(); ++w) {
        if (rte_eal_remote_launch(worker_main, contexts_[w].get(), lcores_[w]) != 0) {
            error = "cannot launch worker " + std::to_string(w) + " on lcore " +
                    std::to_string(lcores_[w]);
            // The workers already launched need the source to end: stop it and let the
            // caller run() it to completion before wait().
            source_->stop();
            launched_ = true;
            return false;
        }
        ++started_;
    }
    launched_ = true;
    return true;
}

void Pipeline::wait() {
    if (!launched_) return;
    // rte_eal_wait_lcore() spins; on a shared core that spin would slow the workers, so
    // wait for their `finished` flags with a sleeping backoff first.
    for (unsigned w = 0; w < started_; ++w) {
        Backoff backoff;
        while (!contexts_[w]->finished.load(std::memory_order_acquire)) backoff.pause();
    }
    for (unsigned w = 0; w < started_; ++w) rte_eal_wait_lcore(lcores_[w]);
    exporter_->finish();
    launched_ = false;
}

exporter::SummaryCounts Pipeline::totals(double wall_s) const {
    exporter::SummaryCounts s;
    for (std::size_t w = 0; w < contexts_.size(); ++w) {
        const WorkerCounters& c = contexts_[w]->counters;
        s.pkts += c.frames.load(std::memory_order_relaxed);
        s.roce_pkts += c.roce.load(std::memory_order_relaxed);
        s.non_roce_pkts += c.non_roce.load(std::memory_order_relaxed);
        for (std::size_t r = 0; r < proto::kMalformedReasons; ++r)
            s.malformed[r] += c.malformed[r].load(std::memory_order_relaxed);
        const state::EngineCounters& e = engines_[w]->counters();
        s.endpoints += e.endpoints.load(std::memory_order_relaxed);
        s.connections += e.connections.load(std::memory_order_relaxed);
        s.msgs += e.msgs.load(std::memory_order_relaxed);
        s.table_full_pkts += e.table_full.load(std::memory_order_relaxed);
        s.table_full_endpoints +=
            state::refused_endpoints(e.table_full_bits.load(std::memory_order_relaxed));
    }
    s.wall_s = wall_s;
    s.mpps = wall_s > 0 ? static_cast<double>(s.pkts) / wall_s / 1e6 : 0.0;
    return s;
}

exporter::RunInfo Pipeline::run_info() const {
    exporter::RunInfo info;
    const double hz = static_cast<double>(rte_get_tsc_hz());
    for (std::size_t w = 0; w < contexts_.size(); ++w) {
        const WorkerCounters& c = contexts_[w]->counters;
        info.worker_frames.push_back(c.frames.load(std::memory_order_relaxed));
        info.worker_busy_s.push_back(hz > 0 ? c.busy_cycles.load(std::memory_order_relaxed) / hz
                                            : 0.0);
        info.worker_cpu_s.push_back(c.cpu_ns.load(std::memory_order_relaxed) / 1e9);
        const state::EngineCounters& e = engines_[w]->counters();
        info.records_dropped += e.records_dropped.load(std::memory_order_relaxed);
        info.table_full += e.table_full.load(std::memory_order_relaxed);
        info.table_full_endpoints +=
            state::refused_endpoints(e.table_full_bits.load(std::memory_order_relaxed));
        info.evicted += e.evicted.load(std::memory_order_relaxed);
        info.msgs_overflow += e.msgs_overflow.load(std::memory_order_relaxed);
        info.orphans_dropped += e.orphans_dropped.load(std::memory_order_relaxed);
        info.events_unwindowed += e.events_unwindowed.load(std::memory_order_relaxed);
    }
    return info;
}

}  // namespace insert::pipeline
