// insert-dp replay: offline telemetry over a pcap/pcapng file on N worker lcores, through
// the same workers, engine and exporter as the live modes (dataplane/pipeline).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/common/nats_options.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/file_source.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/tools/commands.hpp"
#include "dataplane/tools/dataplane_start.hpp"
#include "dataplane/tools/memory_budget.hpp"
#include "dataplane/tools/option_checks.hpp"
#include "dataplane/tools/output_file.hpp"
#include "dataplane/tools/pipeline_config.hpp"
#include "dataplane/tools/records_nats.hpp"
#include "dataplane/tools/stop_signals.hpp"

namespace insert::tools {

namespace {

constexpr const char* kName = "insert-dp replay";
constexpr unsigned kMaxWorkers = 64;
// --nats at the end: how long the bus gets to acknowledge what waits (while the bus is
// reachable, the replay waited for room rather than dropping: this is only the tail). Longer
// than a JetStream cluster takes to elect a stream's leader when one is killed (4-6 s
// measured), so that a node lost at the end loses nothing; a replay whose bus is gone
// waits this long before it drops what is left.
constexpr auto kNatsFinish = std::chrono::seconds(30);

struct ReplayOptions {
    std::string file;
    unsigned workers = 1;
    bool records_given = false;
    std::string records;  // "-" stdout
    double interval_s = 0;
    std::string shard = "ip-pair";
    uint32_t max_endpoints = 1u << 20;
    bool max_endpoints_given = false;
    double idle_timeout_s = 0;
    unsigned record_ring = 4096;
    bool progress = false;
    bool quiet = false;
    NatsOptions nats;  // --nats: the records to NATS JetStream too (docs/scale-out.md)
    std::vector<std::string> eal_args;
};

constexpr const char* kExamples = R"(
Examples:
  insert-dp replay pcaps/rc_mixed.pcap
      analyse on one worker; terminal summary on stdout
  insert-dp replay trace.pcapng --workers 4 --records out.jsonl
      four worker lcores (more lcores than cores is fine), JSON Lines to out.jsonl
  insert-dp replay trace.pcap --records - --interval 1 | jq 'select(.type=="msg")'
      records on stdout with periodic qp records every second of capture time;
      the summary goes to stderr
  tcpdump -i eth1 -w - -c 100000 udp port 4791 | insert-dp replay -
      a capture piped in (read to its end first; a live link: insert-dp monitor)
  insert-dp replay big.pcap --workers 2 -- --lcores 0@0,1@1,2@1 --no-huge -m 512
      EAL options after `--` replace the defaults picked for you
  insert-dp replay trace.pcap --records out.jsonl --nats nats://bus1:4222,nats://bus2:4222
      the records also to NATS JetStream, by host partition (docs/scale-out.md)

EAL defaults: hugepages when enough are free (else --no-huge), --in-memory, --no-pci,
a unique --file-prefix, and one lcore for the reader plus one per worker.
Stop with Ctrl-C, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2: reading stops, every
record read so far is written whole, the summary says `"interrupted": true` and names the
signal, and the exit status is 128 + the signal's number.
Exit status: 0 done, 2 bad options or bad input, 1 runtime failure, 128+N stopped by signal N.
)";

// 0 parsed, 1 --help printed, 2 error printed.
int parse(int argc, char** argv, ReplayOptions& opt) {
    std::vector<std::string> args;
    split_eal_args(argc, argv, args, opt.eal_args);

    CLI::App app("Offline RoCEv2 telemetry over a capture file", kName);
    app.footer(kExamples);
    app.add_option("FILE", opt.file,
                   "pcap or pcapng capture (Ethernet link type); - for standard input, read "
                   "to its end before the replay starts")
        ->required();
    app.add_option("--workers", opt.workers, "worker lcores (default 1)")
        ->check(CLI::Range(1u, kMaxWorkers));
    CLI::Option* records = app.add_option("--records", opt.records,
                                          "write JSON Lines records (docs/records.md) to OUT, or - "
                                          "for stdout");
    app.add_option("--interval", opt.interval_s,
                   "periodic qp records every S seconds of capture time (at least 0.0001)")
        ->check(seconds_between(kMinInterval, kMaxDuration));
    app.add_option("--shard", opt.shard,
                   "shard key: ip-pair (default) or ip-pair-sport (needs symmetric source "
                   "ports)")
        ->check(CLI::IsMember({"ip-pair", "ip-pair-sport"}));
    CLI::Option* max_endpoints =
        app.add_option("--max-endpoints", opt.max_endpoints,
                       "endpoint capacity in total, split over the workers (default 1048576; "
                       "refused when its tables would not fit in the available memory)")
            ->check(CLI::Range(1u, 1u << 28));
    app.add_option("--idle-timeout", opt.idle_timeout_s,
                   "evict endpoints idle for S seconds of capture time (default: never)")
        ->check(seconds_between(kMinIdleTimeout, kMaxIdleTimeout));
    app.add_option("--record-ring", opt.record_ring,
                   "records per worker ring, a power of two (default 4096); a full ring makes "
                   "its worker wait, never drops")
        ->check(CLI::Range(16u, 1u << 20));
    app.add_flag("--progress", opt.progress, "progress line on stderr even when not a terminal");
    app.add_flag("--quiet", opt.quiet, "no terminal summary");
    add_nats_options(app, opt.nats);
    if (const int rc = parse_args(app, args, kName); rc != 0) return rc;
    opt.records_given = records->count() > 0;
    opt.max_endpoints_given = max_endpoints->count() > 0;
    if ((opt.record_ring & (opt.record_ring - 1)) != 0) {
        std::fprintf(stderr, "%s: --record-ring %u is not a power of two\n", kName,
                     opt.record_ring);
        return 2;
    }
    return 0;
}

// The state tables of `workers` engines holding `max_endpoints` together, at capacity.
uint64_t state_bytes(uint32_t max_endpoints, unsigned workers) {
    state::EngineConfig engine;
    engine.max_endpoints = (max_endpoints + workers - 1) / workers;
    engine.grow_tables = true;
    return state::Engine::memory_bytes(engine) * workers;
}

// --max-endpoints must fit in the available memory with the rest of the run (`other`
// bytes). A value given on the command line that does not is refused (false, `error`); the
// default is lowered to what fits, with a warning.
bool fit_max_endpoints(ReplayOptions& opt, uint64_t other, std::string& error) {
    const uint64_t available = available_memory_bytes();
    const auto fits = [&](uint32_t n) {
        return memory_fits(state_bytes(n, opt.workers) + other, available, false);
    };
    if (fits(opt.max_endpoints)) return true;
    uint32_t lo = 0, hi = opt.max_endpoints;  // the largest n that fits is in [lo, hi)
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    const std::string need = format_bytes(state_bytes(opt.max_endpoints, opt.workers) + other);
    if (opt.max_endpoints_given || lo < opt.workers) {
        error = "--max-endpoints " + std::to_string(opt.max_endpoints) + " needs " + need +
                " of memory, only " + format_bytes(available) + " available (at most " +
                std::to_string(lo) + " endpoints fit)";
        return false;
    }
    std::fprintf(stderr,
                 "%s: warning: %s of memory available: --max-endpoints lowered from %u to %u\n",
                 kName, format_bytes(available).c_str(), opt.max_endpoints, lo);
    opt.max_endpoints = lo;
    return true;
}

// A pcapng is walked once before anything is written: a corrupt block deep inside fails
// with nothing on stdout, as `insert-dp decode` does. (A pcap has no such errors: a record
// cut short only ends it, which is a warning.) It runs while EAL starts, which mostly waits.
bool check_whole_capture(const std::string& path, capture::Format format, std::string& error) {
    if (format != capture::Format::pcapng) return true;
    capture::CaptureFile walk;
    if (!walk.open(path)) {
        error = walk.error();
        return false;
    }
    capture::Frame frame;
    while (walk.next(frame)) {
    }
    if (walk.error().empty() || walk.truncated()) return true;
    error = walk.error();
    return false;
}

// One replay, as the steps run() takes in order: check the inputs, start EAL, build the
// pipeline, open the outputs, run to the end of the capture, report. A step that cannot go
// on prints its one line, sets the exit status and returns false; what was started stops
// as the members go, in reverse order (the populating thread first, the pipeline before
// its source, the source - mbuf pool and mapping - before EAL).
class ReplayRun {
  public:
    explicit ReplayRun(ReplayOptions& opt) : opt_(opt) {}
    int run();

  private:
    bool check_inputs();
    bool start_eal();
    bool build_pipeline();
    bool open_outputs();
    void run_to_end();
    void report();
    void shut_down();

    pipeline::PipelineConfig pipeline_config() const;
    void warn_incomplete_capture();
    exporter::SummaryCounts write_summary_record();
    void finish_nats();
    void print_terminal_summary(const exporter::SummaryCounts& totals);
    // Prints "insert-dp replay: `line`", sets the exit status; false, for the step to return.
    bool stop_with(int status, const std::string& line);

    ReplayOptions& opt_;
    int status_ = 0;
    std::string error_;
    capture::CaptureFile capture_;  // moves into the source once EAL runs
    bool records_to_stdout_ = false;
    std::FILE* records_ = nullptr;  // stdout, or the --records file once opened
    std::FILE* summary_out_ = stdout;
    pipeline::EalRequest eal_request_;
    std::vector<unsigned> cpus_;
    pipeline::EalSession eal_;
    pipeline::MbufTimestamp timestamp_;
    std::unique_ptr<pipeline::FileSource> source_;
    std::unique_ptr<pipeline::Pipeline> pipe_;
    std::unique_ptr<RecordsNats> nats_;  // --nats; in front of records_, closed before it
    // Maps the capture in while EAL starts; last, so joined before the mapping goes with the
    // source (or the capture) on every way out.
    std::jthread populate_;

    // The run's outcome, for report().
    bool complete_ = true;
    std::string walk_error_;
    int signal_ = 0;
    double wall_s_ = 0;
};

int ReplayRun::run() {
    if (!check_inputs() || !start_eal() || !build_pipeline() || !open_outputs()) return status_;
    run_to_end();
    report();
    shut_down();
    return status_;
}

bool ReplayRun::stop_with(int status, const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", kName, line.c_str());
    status_ = status;
    return false;
}

// Everything that can be refused is checked before EAL starts or stdout is touched.
bool ReplayRun::check_inputs() {
    if (!capture_.open(opt_.file)) return stop_with(2, capture_.error());
    records_to_stdout_ = opt_.records_given && opt_.records == "-";
    if (opt_.records_given && !records_to_stdout_ &&
        !check_output("--records", opt_.records, opt_.file, error_))
        return stop_with(2, error_);
    records_ = records_to_stdout_ ? stdout : nullptr;
    summary_out_ = records_to_stdout_ ? stderr : stdout;

    eal_request_.lcores = opt_.workers + 1;
    eal_request_.memory_bytes = (64u << 20) + uint64_t{opt_.workers} * (8u << 20);
    eal_request_.tool = "insert-dp-replay";
    eal_request_.user_args = opt_.eal_args;
    if (!fit_max_endpoints(opt_, eal_request_.memory_bytes + (64u << 20), error_))
        return stop_with(2, error_);
    NatsConfig nats;
    if (!nats_config_from(opt_.nats, kName, default_producer_identity("insert-dp"), nats, error_))
        return stop_with(2, error_);
    if (opt_.nats.enabled()) {
        nats.wait_when_full = true;  // a file waits for us: while the bus is there, so do we
        nats_ = RecordsNats::create(nats, error_);
        if (!nats_) return stop_with(2, error_);
    }
    return true;
}

// EAL mostly waits while it starts: the capture is mapped in and a pcapng walked whole
// meanwhile. A bad capture is bad input (2) even when EAL failed too.
bool ReplayRun::start_eal() {
    cpus_ = pipeline::allowed_cpus();  // before EAL pins us
    // The capture's first GiB is mapped in while EAL starts, which mostly sleeps, and while
    // the reader starts; joined once the reader is done with the mapping.
    constexpr std::size_t kPopulateBytes = std::size_t{1} << 30;
    populate_ = std::jthread(
        [mapping = capture_.mapping()] { capture::populate(mapping, kPopulateBytes); });
    std::string scan_error;
    bool scan_ok = true;
    std::thread scan([&, format = capture_.format()] {
        scan_ok = check_whole_capture(opt_.file, format, scan_error);
    });
    const bool started = start_dataplane(eal_request_, eal_, timestamp_, error_);
    scan.join();
    if (!scan_ok) return stop_with(2, scan_error);  // EAL stops with `eal_`
    if (!started) return stop_with(eal_.bad_options() ? 2 : 1, error_);
    return true;
}

pipeline::PipelineConfig ReplayRun::pipeline_config() const {
    pipeline::PipelineConfig config = pipeline_config_from({
        // --max-endpoints bounds the whole run's memory: each worker's table gets its share
        // (the shard hash spreads endpoints evenly; table_full in the summary says when a
        // skewed share did not fit).
        .endpoints_per_worker = (opt_.max_endpoints + opt_.workers - 1) / opt_.workers,
        .idle_timeout_s = opt_.idle_timeout_s,
        .interval_s = opt_.interval_s,
        .record_ring = opt_.record_ring,
        .full_policy = pipeline::FullPolicy::wait,  // a file waits for us: nothing dropped
        .records = records_,
        .cpus = cpus_,
    });
    config.make_engine = &state::Engine::create;
    config.engine.grow_tables = true;  // offline: no frames to drop while a table doubles
    config.exporter.progress = opt_.progress || ::isatty(STDERR_FILENO);
    config.exporter.progress_is_tty = ::isatty(STDERR_FILENO);
    config.exporter.summary = !opt_.quiet;
    // Each engine evicts its part of a split endpoint on its own: the exporter joins the
    // parts one engine would have kept (docs/pipeline.md); a live appliance holds nothing.
    config.exporter.idle_timeout_ns = config.engine.idle_timeout_ns;
    config.exporter.tick_ns = config.worker.tick_ns;
    config.exporter.stop_on_write_error = true;
    return config;
}

// The capture goes to the source, which reads it on this (main) lcore and feeds the
// workers; the pipeline around it.
bool ReplayRun::build_pipeline() {
    pipeline::FileSourceConfig source_config;
    source_config.workers = opt_.workers;
    source_config.policy = *pipeline::parse_shard_policy(opt_.shard);
    source_ = pipeline::FileSource::create(std::move(capture_), source_config, timestamp_, error_);
    if (source_)
        pipe_ = pipeline::Pipeline::create(pipeline_config(), *source_, timestamp_, error_);
    if (!source_ || !pipe_) return stop_with(1, error_);
    return true;
}

// Started: now the records file may be opened (and truncated); --nats in front of it.
bool ReplayRun::open_outputs() {
    if (opt_.records_given && !records_to_stdout_) {
        records_ = open_output("--records", opt_.records, opt_.file, error_);
        if (!records_) return stop_with(2, error_);
        pipe_->exporter().set_records(records_);
    }
    if (nats_) {
        if (!nats_->open(records_, cpus_, error_)) return stop_with(1, error_);
        pipe_->exporter().set_records(nats_->file());
    }
    return true;
}

// A stop signal stops the reader (atomics only) and the normal drain flushes everything. A
// closed records pipe (`| head`) becomes a write error: the exporter stops the reader, the
// workers drain and EAL still cleans up.
void ReplayRun::run_to_end() {
    const auto start = std::chrono::steady_clock::now();
    install_stop_signals(*source_);
    if (!pipe_->launch(error_)) {
        std::fprintf(stderr, "%s: %s\n", kName, error_.c_str());
        status_ = 1;
    }
    complete_ = source_->run(walk_error_);
    populate_.join();
    pipe_->wait();
    restore_stop_signals();
    signal_ = stop_signal();
    wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A capture cut short (still being written, copied partially) is ordinary: warn and keep
// the results. A corrupt one, or one that shrank while it was read, is bad input: the same
// results, exit 2.
void ReplayRun::warn_incomplete_capture() {
    if (complete_) return;
    std::fprintf(stderr, "%s: %s%s; the %llu frames before it were analysed\n", kName,
                 source_->truncated() ? "warning: " : "", walk_error_.c_str(),
                 static_cast<unsigned long long>(source_->progress().frames));
    if (!source_->truncated()) status_ = 2;
}

exporter::SummaryCounts ReplayRun::write_summary_record() {
    exporter::SummaryCounts totals = pipe_->totals(wall_s_);
    totals.signal = signal_name(signal_);
    exporter::RecordWriter& writer = pipe_->exporter().writer();
    writer.write_summary(totals);
    if (!writer.flush()) {
        std::fprintf(stderr, "%s: writing records to %s failed: %s\n", kName,
                     records_to_stdout_ ? "stdout" : opt_.records.c_str(), std::strerror(errno));
        status_ = 1;
    }
    return totals;
}

void ReplayRun::finish_nats() {
    if (nats_) nats_->finish(kNatsFinish);
}

void ReplayRun::print_terminal_summary(const exporter::SummaryCounts& totals) {
    if (opt_.quiet) return;
    exporter::RunInfo info = pipe_->run_info();
    info.input = opt_.file;
    info.shard_policy = opt_.shard;
    pipe_->exporter().summary().render(summary_out_, totals, info);
    if (std::fflush(summary_out_) != 0 || std::ferror(summary_out_)) {
        std::fprintf(stderr, "%s: writing the summary to %s failed: %s\n", kName,
                     summary_out_ == stdout ? "stdout" : "stderr", std::strerror(errno));
        status_ = 1;
    }
}

void ReplayRun::report() {
    warn_incomplete_capture();
    const exporter::SummaryCounts totals = write_summary_record();
    finish_nats();
    print_terminal_summary(totals);
    if (source_->oversize_frames())
        std::fprintf(stderr, "%s: warning: %llu frames longer than 65535 bytes were cut\n", kName,
                     static_cast<unsigned long long>(source_->oversize_frames()));
    if (signal_ != 0) {
        std::fprintf(stderr, "%s: interrupted by %s after %llu frames\n", kName,
                     signal_name(signal_),
                     static_cast<unsigned long long>(source_->progress().frames));
        if (status_ == 0) status_ = 128 + signal_;
    }
}

// In the order the parts depend on each other, the records file once nothing writes to it.
void ReplayRun::shut_down() {
    pipe_.reset();    // engines and rings before the mbufs' pool
    source_.reset();  // pool and mapping before EAL
    nats_.reset();    // the FILE* in front of records_
    if (records_ && records_ != stdout) std::fclose(records_);
    eal_.stop();
}

}  // namespace

int run_replay(int argc, char** argv) {
    ReplayOptions opt;
    if (const int rc = parse(argc, argv, opt); rc != 0) return rc == 1 ? 0 : 2;
    return ReplayRun(opt).run();
}

}  // namespace insert::tools
