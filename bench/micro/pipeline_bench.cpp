// insert-pipeline-bench: the whole pipeline (workers, engines, record rings, exporter) over
// frames already in memory - no file I/O, no reader core: each worker's rx_burst takes
// mbufs from a pool and attaches its pre-sharded frames, as a NIC PMD's receive would.
// Reports per-worker Mpps (frames / CPU time of that worker's thread) and total Mpps (frames /
// wall time) for 1..N workers on workloads of several endpoint counts; medians of
// --repeat runs. Use hugepages (scripts/setup.sh): 4 KB pages slow mbuf access.
// The engines' tables are resident from their creation, as in the live appliance
// (pipeline/resident_memory.hpp); --lazy-tables leaves them to fault in page by page on first
// touch, as replay does, which puts the kernel's zero-filling into the workers' time.
//
// The workload's shape (dataplane/workload/workload.hpp): small messages one at a time by default;
// --message-packets 64 --active 64 for line-rate traffic (mostly full 1 KB frames of long
// messages, 64 in flight, interleaved). --engine none replaces the state engine with one
// that only counts packets (parse_only_engine.hpp): the rate of everything else.
//
//   insert-pipeline-bench [--endpoints 1000,100000,1000000] [--workers 1,2]
//                         [--messages-per-endpoint 4] [--message-packets 4] [--active 1]
//                         [--repeat 3] [--lazy-tables] [--engine state|none]
//                         [-- EAL options]
#include <fmt/format.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/micro/parse_only_engine.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/memory_source.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/pipeline/resident_memory.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/workload/workload.hpp"

using namespace insert;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct RunResult {
    double total_mpps = 0;
    double per_worker_mpps = 0;  // mean over workers of frames / thread CPU seconds
    double balance = 0;          // max/mean frames per worker
    uint64_t frames = 0;
    uint64_t msgs = 0;
};

bool run_once(const std::vector<pipeline::MemoryFrame>& frames, unsigned workers,
              uint32_t endpoints, const pipeline::EngineFactory& make_engine,
              const pipeline::MbufTimestamp& ts, RunResult& out, std::string& error) {
    auto source =
        pipeline::MemorySource::create(frames, workers, pipeline::ShardPolicy::ip_pair, ts, error);
    if (!source) return false;
    pipeline::PipelineConfig config;
    config.make_engine = make_engine;
    // Each worker's share of the endpoints plus 25% for an uneven hash split.
    config.engine.max_endpoints = endpoints / workers + endpoints / workers / 4 + 1024;
    auto pipe = pipeline::Pipeline::create(config, *source, ts, error);
    if (!pipe) return false;
    const auto start = std::chrono::steady_clock::now();
    if (!pipe->launch(error)) return false;
    source->run(error);
    pipe->wait();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto totals = pipe->totals(wall);
    const auto info = pipe->run_info();
    out.frames = totals.pkts;
    out.msgs = totals.msgs;
    out.total_mpps = totals.mpps;
    double sum = 0;
    uint64_t most = 0;
    for (unsigned w = 0; w < workers; ++w) {
        sum += info.worker_cpu_s[w] > 0 ? info.worker_frames[w] / info.worker_cpu_s[w] / 1e6 : 0;
        most = std::max(most, info.worker_frames[w]);
    }
    out.per_worker_mpps = sum / workers;
    out.balance = totals.pkts ? static_cast<double>(most) * workers / totals.pkts : 0;
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    constexpr const char* kName = "insert-pipeline-bench";
    std::vector<uint64_t> endpoint_counts = {1000, 100000, 1000000};
    std::vector<uint64_t> worker_counts = {1, 2};
    uint64_t per_endpoint = 4;
    uint64_t message_packets = 4;
    uint64_t active = 1;
    uint64_t repeat = 3;
    bool lazy_tables = false;
    std::string engine = "state";
    std::vector<std::string> args, eal_args;
    tools::split_eal_args(argc, argv, args, eal_args);
    CLI::App app("The whole pipeline over frames in memory: Mpps per worker and in total", kName);
    app.add_option("--endpoints", endpoint_counts, "endpoint counts, comma-separated")
        ->delimiter(',')
        ->check(CLI::PositiveNumber);
    app.add_option("--workers", worker_counts, "worker counts, comma-separated")
        ->delimiter(',')
        ->check(CLI::Range(uint64_t{1}, uint64_t{64}));
    app.add_option("--messages-per-endpoint", per_endpoint, "messages per endpoint (default 4)")
        ->check(CLI::PositiveNumber);
    app.add_option("--message-packets", message_packets,
                   "WRITEs of up to N packets (default 4; 64 for line rate)")
        ->check(CLI::PositiveNumber);
    app.add_option("--active", active, "messages on the wire at once (default 1; 64 for line rate)")
        ->check(CLI::PositiveNumber);
    app.add_option("--repeat", repeat, "runs per row; the median is reported (default 3)")
        ->check(CLI::PositiveNumber);
    app.add_flag("--lazy-tables", lazy_tables,
                 "engine tables faulted in on first touch (as replay) instead of locked");
    app.add_option("--engine", engine, "state (default), or none: count packets only")
        ->type_name("state|none")
        ->check(CLI::IsMember({"state", "none"}));
    app.footer("EAL options follow `--`.");
    if (const int rc = tools::parse_args(app, args, kName); rc != 0) return rc == 1 ? 0 : rc;
    const bool engine_none = engine == "none";
    const pipeline::EngineFactory make_engine =
        engine_none ? pipeline::EngineFactory(&bench::ParseOnlyEngine::create)
                    : pipeline::EngineFactory(&state::Engine::create);

    const unsigned max_workers =
        static_cast<unsigned>(*std::max_element(worker_counts.begin(), worker_counts.end()));
    pipeline::EalRequest req;
    req.lcores = max_workers + 1;
    req.memory_bytes = 256u << 20;
    req.tool = kName;
    req.user_args = eal_args;
    pipeline::EalSession eal;
    std::string error;
    const std::size_t machine_cpus = pipeline::allowed_cpus().size();  // before EAL pins us
    if (!eal.start(req, error)) {
        std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
        return 1;
    }
    pipeline::MbufTimestamp ts;
    if (!ts.register_field(error)) {
        std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
        return 1;
    }
    // After EAL (its memory stays as it is), before any engine maps its tables.
    const bool resident = !lazy_tables && pipeline::lock_future_memory();
    std::printf("# EAL: %s, %u lcores on %zu cpus; engine tables %s\n",
                eal.plan().hugepages ? "hugepages" : "4 KB pages", rte_lcore_count(), machine_cpus,
                resident ? "resident (locked at creation)" : "faulted in on first touch");
    std::printf("# workload: messages of up to %llu packets, %llu on the wire at once\n",
                static_cast<unsigned long long>(message_packets),
                static_cast<unsigned long long>(active));
    if (engine_none)
        std::printf("# engine: none (packets are only counted: the rest of the path's rate)\n");
    std::printf("%-10s %-8s %10s %12s %14s %14s %9s\n", "endpoints", "workers", "frames", "msgs",
                "Mpps/worker", "Mpps total", "balance");
    for (uint64_t endpoints : endpoint_counts) {
        workload::WorkloadSpec spec;
        spec.endpoints = static_cast<uint32_t>(endpoints);
        spec.hosts = 1024;
        spec.messages = endpoints * per_endpoint;
        spec.max_message_packets = static_cast<uint32_t>(message_packets);
        spec.active = static_cast<uint32_t>(active);
        const workload::CompactWorkload w = workload::build_compact_workload(spec);
        std::vector<pipeline::MemoryFrame> frames(w.frames());
        for (std::size_t i = 0; i < w.frames(); ++i)
            frames[i] = {w.frame(i), w.lengths[i], w.timestamps[i]};
        for (uint64_t workers : worker_counts) {
            std::vector<double> per_worker, total, balance;
            RunResult r;
            for (uint64_t k = 0; k < repeat; ++k) {
                if (!run_once(frames, static_cast<unsigned>(workers), spec.endpoints, make_engine,
                              ts, r, error)) {
                    std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
                    return 1;
                }
                per_worker.push_back(r.per_worker_mpps);
                total.push_back(r.total_mpps);
                balance.push_back(r.balance);
            }
            std::printf("%-10llu %-8llu %10llu %12llu %14.2f %14.2f %9.2f\n",
                        static_cast<unsigned long long>(endpoints),
                        static_cast<unsigned long long>(workers),
                        static_cast<unsigned long long>(r.frames),
                        static_cast<unsigned long long>(r.msgs), median(per_worker), median(total),
                        median(balance));
            std::fflush(stdout);
        }
    }
    return 0;
}
