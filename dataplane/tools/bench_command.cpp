// insert-dp bench: the line-rate benchmark users run on their own hardware. Synthetic RoCEv2
// traffic (dataplane/workload: RC connections, WRITE/SEND/READ/atomics, each answered)
// kept in memory and fed through the real workers, engines and exporter by MemorySource,
// which hands out mbufs on each worker's lcore as a NIC PMD would - no file, no ports, no
// reader core. Runs 1..N workers and prints Mpps and Gb/s per worker and in total.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
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
#include "dataplane/tools/pipeline_config.hpp"
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

// 0 parsed, 1 --help printed, 2 error printed.
int parse(int argc, char** argv, BenchOptions& opt) {
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
    return parse_args(app, args, kName);
}

workload::WorkloadSpec workload_spec(const BenchOptions& opt) {
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
    return spec;
}

// Upper bound of a workload's memory: frames are at most a message's packets plus one
// response each, and each costs its 128-byte slot, length, timestamp and MemoryFrame.
uint64_t workload_bytes(const workload::WorkloadSpec& spec) {
    const uint64_t frames = spec.messages * (spec.max_message_packets + 1);
    return frames * (workload::CompactWorkload::kSlot + sizeof(uint32_t) + sizeof(uint64_t) +
                     sizeof(pipeline::MemoryFrame));
}

// Every engine is sized for every endpoint (the tables fill as they see their share).
uint32_t engine_endpoints(const BenchOptions& opt) {
    return std::max<uint32_t>(1024, opt.endpoints);
}

// Wire bytes per worker queue, sharded exactly as MemorySource shards the frames.
std::vector<uint64_t> queue_bytes(const std::vector<pipeline::MemoryFrame>& frames, unsigned n) {
    std::vector<uint64_t> bytes(n);
    for (const pipeline::MemoryFrame& f : frames)
        bytes[n == 1 ? 0
                     : pipeline::shard_index(
                           pipeline::shard_hash({f.data, f.len}, pipeline::ShardPolicy::ip_pair),
                           n)] += f.len;
    return bytes;
}

// What the passes of one worker count add up to.
struct Measurement {
    explicit Measurement(unsigned workers) : frames(workers), bytes(workers), busy_s(workers) {}
    std::vector<uint64_t> frames;  // per worker
    std::vector<uint64_t> bytes;   // wire bytes per worker
    std::vector<double> busy_s;    // per worker: time on non-empty bursts
    double wall_s = 0;
    uint64_t msgs = 0;
};

// One benchmark, as the steps run() takes in order: check the inputs, build the traffic,
// start EAL, then for each worker count run passes and print its rows. A step that cannot
// go on prints its one line, sets the exit status and returns false.
class BenchRun {
  public:
    explicit BenchRun(const BenchOptions& opt) : opt_(opt), spec_(workload_spec(opt)) {}
    int run();

  private:
    bool check_inputs();
    void build_traffic();
    bool start_eal();
    void print_header() const;
    bool measure(unsigned workers, Measurement& m);
    bool run_pass(unsigned workers, const std::vector<uint64_t>& bytes_per_queue, Measurement& m);
    void print_rows(unsigned workers, const Measurement& m) const;
    int finish();

    pipeline::PipelineConfig pipeline_config() const;
    // Prints "insert-dp bench: `line`", sets the exit status; false, for the step to return.
    bool stop_with(int status, const std::string& line);

    const BenchOptions& opt_;
    const workload::WorkloadSpec spec_;
    int status_ = 0;
    workload::CompactWorkload workload_;
    std::vector<pipeline::MemoryFrame> frames_;  // into workload_'s bytes
    uint64_t total_bytes_ = 0;
    std::size_t machine_cpus_ = 0;  // the machine's, for the header
    std::vector<unsigned> cpus_;    // the exporter's: the ones EAL left us
    pipeline::EalSession eal_;
    pipeline::MbufTimestamp timestamp_;
};

int BenchRun::run() {
    if (!check_inputs()) return status_;
    build_traffic();
    if (!start_eal()) return status_;
    print_header();
    for (unsigned n = opt_.only ? opt_.workers : 1; n <= opt_.workers; ++n) {
        Measurement m(n);
        if (!measure(n, m)) return status_;
        print_rows(n, m);
    }
    return finish();
}

bool BenchRun::stop_with(int status, const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", kName, line.c_str());
    status_ = status;
    return false;
}

// The workload and one engine per worker, each sized for every endpoint, are all in memory
// at once: refused before anything is built when they would not fit.
bool BenchRun::check_inputs() {
    state::EngineConfig engine;
    engine.max_endpoints = engine_endpoints(opt_);
    const uint64_t need =
        workload_bytes(spec_) + state::Engine::memory_bytes(engine) * opt_.workers;
    const uint64_t available = available_memory_bytes();
    if (memory_fits(need, available, false)) return true;
    std::fprintf(stderr,
                 "%s: --endpoints %u with %u worker%s needs about %s of memory, only %s "
                 "available\n",
                 kName, opt_.endpoints, opt_.workers, opt_.workers == 1 ? "" : "s",
                 format_bytes(need).c_str(), format_bytes(available).c_str());
    status_ = 2;
    return false;
}

// Built once, before EAL: every pass of every worker count replays the same frames.
void BenchRun::build_traffic() {
    workload_ = workload::build_compact_workload(spec_);
    frames_.resize(workload_.frames());
    for (std::size_t f = 0; f < workload_.frames(); ++f) {
        frames_[f] = {workload_.frame(f), workload_.lengths[f], workload_.timestamps[f]};
        total_bytes_ += workload_.lengths[f];
    }
}

bool BenchRun::start_eal() {
    machine_cpus_ = pipeline::allowed_cpus().size();  // before EAL pins this thread
    pipeline::EalRequest req;
    req.lcores = opt_.workers + 1;
    req.memory_bytes = (64u << 20) + uint64_t{opt_.workers} * (16u << 20);
    req.tool = "insert-dp-bench";
    req.user_args = opt_.eal_args;
    std::string error;
    if (!eal_.start(req, error)) return stop_with(eal_.bad_options() ? 2 : 1, error);
    if (!timestamp_.register_field(error)) return stop_with(1, error);
    cpus_ = pipeline::allowed_cpus();
    return true;
}

void BenchRun::print_header() const {
    std::printf(
        "%s: %u endpoints, %u B MTU mixed RC workload (%s traffic), %zu frames per pass, mean "
        "frame %.0f B, %s, %zu CPUs\n",
        kName, opt_.endpoints, opt_.mtu, opt_.traffic.c_str(), frames_.size(),
        static_cast<double>(total_bytes_) / static_cast<double>(frames_.size()),
        eal_.plan().hugepages ? "hugepages" : "4 KB pages (--no-huge)", machine_cpus_);
    std::printf("%-8s %-7s %10s %10s %10s\n", "workers", "worker", "Mpps", "Gb/s", "busy-Mpps");
}

// No eviction, no periodic records, no records file: the workers' rate is what is measured.
pipeline::PipelineConfig BenchRun::pipeline_config() const {
    pipeline::PipelineConfig config = pipeline_config_from({
        .endpoints_per_worker = engine_endpoints(opt_),
        .full_policy = pipeline::FullPolicy::wait,
        .cpus = cpus_,
    });
    config.make_engine = &state::Engine::create;
    return config;
}

// Whole passes over the traffic with `workers` workers until --seconds of them have run.
bool BenchRun::measure(unsigned workers, Measurement& m) {
    const std::vector<uint64_t> bytes_per_queue = queue_bytes(frames_, workers);
    while (m.wall_s < opt_.seconds)
        if (!run_pass(workers, bytes_per_queue, m)) return false;
    return true;
}

// One pass: a fresh source and pipeline (empty engines), every frame once.
bool BenchRun::run_pass(unsigned workers, const std::vector<uint64_t>& bytes_per_queue,
                        Measurement& m) {
    std::string error;
    auto source = pipeline::MemorySource::create(frames_, workers, pipeline::ShardPolicy::ip_pair,
                                                 timestamp_, error);
    std::unique_ptr<pipeline::Pipeline> pipe;
    if (source) pipe = pipeline::Pipeline::create(pipeline_config(), *source, timestamp_, error);
    if (!pipe) return stop_with(1, error);
    const auto t0 = std::chrono::steady_clock::now();
    if (!pipe->launch(error)) {
        stop_with(1, error);
        source->run(error);
        pipe->wait();
        return false;
    }
    source->run(error);
    pipe->wait();
    m.wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const exporter::RunInfo info = pipe->run_info();
    for (unsigned q = 0; q < workers; ++q) {
        m.frames[q] += info.worker_frames[q];
        m.busy_s[q] += info.worker_busy_s[q];
        m.bytes[q] += bytes_per_queue[q];  // every pass delivers each queue whole
    }
    m.msgs += pipe->totals(0).msgs;
    pipe.reset();
    source.reset();
    return true;
}

void BenchRun::print_rows(unsigned workers, const Measurement& m) const {
    uint64_t tf = 0, tb = 0;
    for (unsigned q = 0; q < workers; ++q) {
        std::printf("%-8u %-7u %10.2f %10.2f %10.2f\n", workers, q, m.frames[q] / m.wall_s / 1e6,
                    m.bytes[q] * 8.0 / m.wall_s / 1e9,
                    m.busy_s[q] > 0 ? m.frames[q] / m.busy_s[q] / 1e6 : 0.0);
        tf += m.frames[q];
        tb += m.bytes[q];
    }
    std::printf("%-8u %-7s %10.2f %10.2f %10s   (%.1f s, %.2f M msgs)\n", workers, "total",
                tf / m.wall_s / 1e6, tb * 8.0 / m.wall_s / 1e9, "", m.wall_s, m.msgs / 1e6);
    std::fflush(stdout);
}

// EAL stops before the last check of stdout, which the rows went to.
int BenchRun::finish() {
    eal_.stop();
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: writing stdout failed: %s\n", kName, std::strerror(errno));
        return 1;
    }
    return 0;
}

}  // namespace

int run_bench(int argc, char** argv) {
    BenchOptions opt;
    if (const int rc = parse(argc, argv, opt); rc != 0) return rc == 1 ? 0 : rc;
    return BenchRun(opt).run();
}

}  // namespace insert::tools
