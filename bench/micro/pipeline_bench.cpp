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
// The workload's shape (bench/micro/workload.hpp): small messages one at a time by default;
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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/micro/parse_only_engine.hpp"
#include "bench/micro/workload.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/memory_source.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/pipeline/resident_memory.hpp"
#include "dataplane/state/engine.hpp"

using namespace insert;

namespace {

std::vector<uint64_t> parse_list(const char* text) {
    std::vector<uint64_t> out;
    std::string s(text);
    std::size_t pos = 0;
    while (pos <= s.size()) {
        const std::size_t comma = s.find(',', pos);
        const std::string item =
            s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        char* end = nullptr;
        const unsigned long long v = std::strtoull(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v == 0) return {};
        out.push_back(v);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return out;
}

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
              uint32_t endpoints, pipeline::EngineFactory make_engine,
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
    std::vector<uint64_t> endpoint_counts = {1000, 100000, 1000000};
    std::vector<uint64_t> worker_counts = {1, 2};
    uint64_t per_endpoint = 4;
    uint64_t message_packets = 4;
    uint64_t active = 1;
    uint64_t repeat = 3;
    bool lazy_tables = false;
    pipeline::EngineFactory make_engine = &state::Engine::create;
    std::vector<std::string> eal_args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](std::vector<uint64_t>& dst) {
            if (i + 1 >= argc || (dst = parse_list(argv[++i])).empty()) {
                std::fprintf(stderr, "insert-pipeline-bench: bad value for %s\n", a.c_str());
                std::exit(2);
            }
        };
        std::vector<uint64_t> one;
        if (a == "--endpoints")
            value(endpoint_counts);
        else if (a == "--workers")
            value(worker_counts);
        else if (a == "--messages-per-endpoint") {
            value(one);
            per_endpoint = one[0];
        } else if (a == "--message-packets") {
            value(one);
            message_packets = one[0];
        } else if (a == "--active") {
            value(one);
            active = one[0];
        } else if (a == "--repeat") {
            value(one);
            repeat = one[0];
        } else if (a == "--lazy-tables") {
            lazy_tables = true;
        } else if (a == "--engine") {
            const std::string v = i + 1 < argc ? argv[++i] : "";
            if (v == "state") {
                make_engine = &state::Engine::create;
            } else if (v == "none") {
                make_engine = &bench::ParseOnlyEngine::create;
            } else {
                std::fprintf(stderr,
                             "insert-pipeline-bench: bad value for --engine: '%s' (state or "
                             "none)\n",
                             v.c_str());
                return 2;
            }
        } else if (a == "--") {
            eal_args.assign(argv + i + 1, argv + argc);
            break;
        } else if (a == "-h" || a == "--help") {
            std::printf(
                "usage: insert-pipeline-bench [--endpoints 1000,100000,1000000] "
                "[--workers 1,2] [--messages-per-endpoint 4] [--message-packets 4] "
                "[--active 1] [--repeat 3] [--lazy-tables] [--engine state|none] "
                "[-- EAL options]\n");
            return 0;
        } else {
            std::fprintf(stderr, "insert-pipeline-bench: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    const unsigned max_workers =
        static_cast<unsigned>(*std::max_element(worker_counts.begin(), worker_counts.end()));
    pipeline::EalRequest req;
    req.lcores = max_workers + 1;
    req.memory_bytes = 256u << 20;
    req.tool = "insert-pipeline-bench";
    req.user_args = eal_args;
    pipeline::EalSession eal;
    std::string error;
    const std::size_t machine_cpus = pipeline::allowed_cpus().size();  // before EAL pins us
    if (!eal.start(req, error)) {
        std::fprintf(stderr, "insert-pipeline-bench: %s\n", error.c_str());
        return 1;
    }
    pipeline::MbufTimestamp ts;
    if (!ts.register_field(error)) {
        std::fprintf(stderr, "insert-pipeline-bench: %s\n", error.c_str());
        return 1;
    }
    // After EAL (its memory stays as it is), before any engine maps its tables.
    const bool resident = !lazy_tables && pipeline::lock_future_memory("insert-pipeline-bench");
    std::printf("# EAL: %s, %u lcores on %zu cpus; engine tables %s\n",
                eal.plan().hugepages ? "hugepages" : "4 KB pages", rte_lcore_count(), machine_cpus,
                resident ? "resident (locked at creation)" : "faulted in on first touch");
    std::printf("# workload: messages of up to %llu packets, %llu on the wire at once\n",
                static_cast<unsigned long long>(message_packets),
                static_cast<unsigned long long>(active));
    if (make_engine != &state::Engine::create)
        std::printf("# engine: none (packets are only counted: the rest of the path's rate)\n");
    std::printf("%-10s %-8s %10s %12s %14s %14s %9s\n", "endpoints", "workers", "frames", "msgs",
                "Mpps/worker", "Mpps total", "balance");
    for (uint64_t endpoints : endpoint_counts) {
        bench::WorkloadSpec spec;
        spec.endpoints = static_cast<uint32_t>(endpoints);
        spec.hosts = 1024;
        spec.messages = endpoints * per_endpoint;
        spec.max_message_packets = static_cast<uint32_t>(message_packets);
        spec.active = static_cast<uint32_t>(active);
        const bench::CompactWorkload w = bench::build_compact_workload(spec);
        std::vector<pipeline::MemoryFrame> frames(w.frames());
        for (std::size_t i = 0; i < w.frames(); ++i)
            frames[i] = {w.frame(i), w.lengths[i], w.timestamps[i]};
        for (uint64_t workers : worker_counts) {
            std::vector<double> per_worker, total, balance;
            RunResult r;
            for (uint64_t k = 0; k < repeat; ++k) {
                if (!run_once(frames, static_cast<unsigned>(workers), spec.endpoints, make_engine,
                              ts, r, error)) {
                    std::fprintf(stderr, "insert-pipeline-bench: %s\n", error.c_str());
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
