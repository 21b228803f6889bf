// insert-dp bench: the line-rate benchmark users run on their own hardware. Synthetic RoCEv2
// traffic (bench/micro/workload: RC connections, WRITE/SEND/READ/atomics, each answered)
// kept in memory and fed through the real workers, engines and exporter by MemorySource,
// which hands out mbufs on each worker's lcore as a NIC PMD would - no file, no ports, no
// reader core. Runs 1..N workers and prints Mpps and Gb/s per worker and in total.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/memory_source.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/tools/commands.hpp"
#include "dataplane/tools/memory_budget.hpp"
#include "dataplane/tools/option_checks.hpp"
#include "dataplane/workload/workload.hpp"

namespace insert::tools {

namespace {

constexpr const char* kName = "insert-dp bench";
constexpr unsigned kMaxWorkers = 64;
// Frames per pass: long enough that set-up is noise (~0.2-1 s per pass), small enough that
// the compact workload (128 B per frame) stays far from the machine's memory.
constexpr uint64_t kMessagesPerPass = 400'000;
// Line-rate traffic: messages up to 64 packets, 64 in flight (dataplane/workload/workload.hpp), and
// a quarter as many messages per pass (about 8x the frames of small ones each).
constexpr uint32_t kLineRateMessagePackets = 64;
constexpr uint32_t kLineRateActive = 64;
constexpr uint64_t kLineRateMessagesPerPass = kMessagesPerPass / 4;

struct BenchOptions {
    unsigned workers = 1;
    uint32_t endpoints = 100'000;
    double seconds = 3;
    uint32_t mtu = 1024;
    uint64_t seed = 1;
    std::string traffic = "small";  // or "line-rate"
    bool only = false;              // only N workers, not 1..N
    std::vector<std::string> eal_args;
};

constexpr const char* kExamples = R"(
Examples:
  insert-dp bench
      one worker, 100k endpoints, 3 s
  insert-dp bench --workers 4 --endpoints 1000000 --seconds 10
      1, 2, 3 and 4 workers over a million endpoints (more lcores than cores is allowed,
      but then the workers share cores: compare busy-Mpps, the rate per busy core)
  insert-dp bench --workers 2 --only -- --no-huge -m 2048
      just two workers, EAL options after `--`
  insert-dp bench --traffic line-rate
      long messages, mostly full 1 KB frames (what a busy 100 GbE port carries)

Traffic: `small` is messages of 1-4 packets, each answered, one at a time - a message
every ~3 frames, the heaviest load per frame; `line-rate` is messages of up to 64 packets,
64 of them interleaved on the wire.

Gb/s counts whole frames as on the wire (headers, payload, ICRC; no preamble or gap).
busy-Mpps is frames per second of time a worker spent on non-empty bursts.
)";

// Upper bound of a workload's memory: frames are at most a message's packets plus one
// response each, and each costs its 128-byte slot, length, timestamp and MemoryFrame.
uint64_t workload_bytes(const workload::WorkloadSpec& spec) {
    const uint64_t frames = spec.messages * (spec.max_message_packets + 1);
    return frames * (workload::CompactWorkload::kSlot + sizeof(uint32_t) + sizeof(uint64_t) +
                     sizeof(pipeline::MemoryFrame));
}

struct Pass {
    std::vector<uint64_t> frames;
    std::vector<uint64_t> bytes;
    std::vector<double> busy_s;
    double wall_s = 0;
};

}  // namespace

int run_bench(int argc, char** argv) {
    BenchOptions opt;
    std::vector<std::string> args;
    split_eal_args(argc, argv, args, opt.eal_args);
    CLI::App app("Line-rate benchmark: synthetic RoCEv2 traffic through the real workers", kName);
    app.footer(kExamples);
    app.add_option("--workers", opt.workers, "up to N worker lcores (default 1)")
        ->check(CLI::Range(1u, kMaxWorkers));
    app.add_option("--endpoints", opt.endpoints, "distinct endpoints (default 100000)")
        ->check(CLI::Range(2u, 1u << 24));
    app.add_option("--seconds", opt.seconds, "seconds per worker count (default 3)")
        ->check(seconds_between(0.01, kMaxIdleTimeout));
    app.add_option("--mtu", opt.mtu, "RoCE path MTU of the workload (default 1024)")
        ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
    app.add_option("--seed", opt.seed, "workload seed");
    app.add_option("--traffic", opt.traffic, "small (default) or line-rate: see below")
        ->check(CLI::IsMember({"small", "line-rate"}));
    app.add_flag("--only", opt.only, "run N workers only, not 1..N");
    if (const int rc = parse_args(app, args, kName); rc != 0) return rc == 1 ? 0 : rc;

    workload::WorkloadSpec spec;
    spec.endpoints = opt.endpoints;
    spec.hosts = std::max<uint32_t>(2, std::min<uint32_t>(opt.endpoints / 4, 4096));
    // Every endpoint appears (messages go to every connection once before repeating); at
    // line rate, each connection carries two messages or more, so that a pass is not all
    // first messages (endpoints are paired during their first).
    if (opt.traffic == "line-rate") {
        spec.max_message_packets = kLineRateMessagePackets;
        spec.active = kLineRateActive;
        spec.messages = std::max<uint64_t>(kLineRateMessagesPerPass, uint64_t{opt.endpoints});
    } else {
        spec.messages = std::max<uint64_t>(kMessagesPerPass, opt.endpoints);
    }
    spec.mtu = opt.mtu;
    spec.seed = opt.seed;
    {
        // The workload and one engine per worker, each sized for every endpoint, are all in
        // memory at once (the engines' tables fill as they see their share).
        state::EngineConfig engine;
        engine.max_endpoints = std::max<uint32_t>(1024, opt.endpoints);
        const uint64_t need =
            workload_bytes(spec) + state::Engine::memory_bytes(engine) * opt.workers;
        const uint64_t available = available_memory_bytes();
        if (!memory_fits(need, available, false)) {
            std::fprintf(stderr,
                         "%s: --endpoints %u with %u worker%s needs about %s of memory, only %s "
                         "available\n",
                         kName, opt.endpoints, opt.workers, opt.workers == 1 ? "" : "s",
                         format_bytes(need).c_str(), format_bytes(available).c_str());
            return 2;
        }
    }
    const workload::CompactWorkload w = workload::build_compact_workload(spec);
    std::vector<pipeline::MemoryFrame> frames(w.frames());
    uint64_t total_bytes = 0;
    for (std::size_t f = 0; f < w.frames(); ++f) {
        frames[f] = {w.frame(f), w.lengths[f], w.timestamps[f]};
        total_bytes += w.lengths[f];
    }

    // Before EAL pins this thread to the main lcore's CPU.
    const std::size_t machine_cpus = pipeline::allowed_cpus().size();
    pipeline::EalRequest req;
    req.lcores = opt.workers + 1;
    req.memory_bytes = (64u << 20) + uint64_t{opt.workers} * (16u << 20);
    req.tool = "insert-dp-bench";
    req.user_args = opt.eal_args;
    pipeline::EalSession eal;
    std::string error;
    if (!eal.start(req, error)) {
        std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
        return eal.bad_options() ? 2 : 1;
    }
    pipeline::MbufTimestamp timestamp;
    if (!timestamp.register_field(error)) {
        std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
        return 1;
    }
    const std::vector<unsigned> cpus = pipeline::allowed_cpus();
    std::printf(
        "%s: %u endpoints, %u B MTU mixed RC workload (%s traffic), %zu frames per pass, mean "
        "frame %.0f B, %s, %zu CPUs\n",
        kName, opt.endpoints, opt.mtu, opt.traffic.c_str(), frames.size(),
        static_cast<double>(total_bytes) / static_cast<double>(frames.size()),
        eal.plan().hugepages ? "hugepages" : "4 KB pages (--no-huge)", machine_cpus);
    std::printf("%-8s %-7s %10s %10s %10s\n", "workers", "worker", "Mpps", "Gb/s", "busy-Mpps");

    for (unsigned n = opt.only ? opt.workers : 1; n <= opt.workers; ++n) {
        std::vector<uint64_t> frames_w(n), bytes_w(n);
        std::vector<double> busy_w(n);
        double wall = 0;
        uint64_t msgs = 0;
        // Wire bytes per worker queue, sharded exactly as MemorySource shards the frames.
        std::vector<uint64_t> queue_bytes(n);
        for (const pipeline::MemoryFrame& f : frames)
            queue_bytes[n == 1 ? 0
                               : pipeline::shard_index(
                                     pipeline::shard_hash({f.data, f.len},
                                                          pipeline::ShardPolicy::ip_pair),
                                     n)] += f.len;
        while (wall < opt.seconds) {
            auto source = pipeline::MemorySource::create(frames, n, pipeline::ShardPolicy::ip_pair,
                                                         timestamp, error);
            pipeline::PipelineConfig config;
            config.make_engine = &state::Engine::create;
            config.engine.max_endpoints = std::max<uint32_t>(1024, opt.endpoints);
            config.full_policy = pipeline::FullPolicy::wait;
            config.exporter.cpus = cpus;
            std::unique_ptr<pipeline::Pipeline> pipe;
            if (source) pipe = pipeline::Pipeline::create(config, *source, timestamp, error);
            if (!pipe) {
                std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
                return 1;
            }
            const auto t0 = std::chrono::steady_clock::now();
            if (!pipe->launch(error)) {
                std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
                source->run(error);
                pipe->wait();
                return 1;
            }
            source->run(error);
            pipe->wait();
            wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const exporter::RunInfo info = pipe->run_info();
            for (unsigned q = 0; q < n; ++q) {
                frames_w[q] += info.worker_frames[q];
                busy_w[q] += info.worker_busy_s[q];
                bytes_w[q] += queue_bytes[q];  // every pass delivers each queue whole
            }
            msgs += pipe->totals(0).msgs;
            pipe.reset();
            source.reset();
        }
        uint64_t tf = 0, tb = 0;
        for (unsigned q = 0; q < n; ++q) {
            std::printf("%-8u %-7u %10.2f %10.2f %10.2f\n", n, q, frames_w[q] / wall / 1e6,
                        bytes_w[q] * 8.0 / wall / 1e9,
                        busy_w[q] > 0 ? frames_w[q] / busy_w[q] / 1e6 : 0.0);
            tf += frames_w[q];
            tb += bytes_w[q];
        }
        std::printf("%-8u %-7s %10.2f %10.2f %10s   (%.1f s, %.2f M msgs)\n", n, "total",
                    tf / wall / 1e6, tb * 8.0 / wall / 1e9, "", wall, msgs / 1e6);
        std::fflush(stdout);
    }
    eal.stop();
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: writing stdout failed: %s\n", kName, std::strerror(errno));
        return 1;
    }
    return 0;
}

}  // namespace insert::tools
