// insert-dp replay: offline telemetry over a pcap/pcapng file on N worker lcores, through
// the same workers, engine and exporter as the live modes (dataplane/pipeline).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/capture/capture_file.hpp"
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
#include "dataplane/tools/stop_signals.hpp"

namespace insert::tools {

namespace {

constexpr const char* kName = "insert-dp replay";
constexpr unsigned kMaxWorkers = 64;

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
  insert-dp replay big.pcap --workers 2 -- --lcores 0@0,1@1,2@1 --no-huge -m 512
      EAL options after `--` replace the defaults picked for you

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
    app.add_option("FILE", opt.file, "pcap or pcapng capture (Ethernet link type)")->required();
    app.add_option("--workers", opt.workers, "worker lcores (default 1)")
        ->check(CLI::Range(1u, kMaxWorkers));
    CLI::Option* records = app.add_option("--records", opt.records,
                                          "write JSON Lines records to OUT, or - for stdout");
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

}  // namespace

int run_replay(int argc, char** argv) {
    ReplayOptions opt;
    if (const int rc = parse(argc, argv, opt); rc != 0) return rc == 1 ? 0 : 2;
    const auto refuse = [](const std::string& line) {
        std::fprintf(stderr, "%s: %s\n", kName, line.c_str());
        return 2;
    };

    // Everything that can be refused is checked before EAL starts or stdout is touched.
    capture::CaptureFile capture;
    if (!capture.open(opt.file)) return refuse(capture.error());
    std::string error;
    const bool records_to_stdout = opt.records_given && opt.records == "-";
    if (opt.records_given && !records_to_stdout &&
        !check_output("--records", opt.records, opt.file, error))
        return refuse(error);
    std::FILE* summary_out = records_to_stdout ? stderr : stdout;

    pipeline::EalRequest eal_request;
    eal_request.lcores = opt.workers + 1;
    eal_request.memory_bytes = (64u << 20) + uint64_t{opt.workers} * (8u << 20);
    eal_request.tool = "insert-dp-replay";
    eal_request.user_args = opt.eal_args;
    if (!fit_max_endpoints(opt, eal_request.memory_bytes + (64u << 20), error))
        return refuse(error);
    const std::vector<unsigned> cpus = pipeline::allowed_cpus();  // before EAL pins us
    // The capture's first GiB is mapped in while EAL starts, which mostly sleeps, and while
    // the reader starts; joined once the reader is done with the mapping.
    constexpr std::size_t kPopulateBytes = std::size_t{1} << 30;
    std::jthread populate(
        [mapping = capture.mapping()] { capture::populate(mapping, kPopulateBytes); });
    std::string scan_error;
    bool scan_ok = true;
    std::thread scan([&, format = capture.format()] {
        scan_ok = check_whole_capture(opt.file, format, scan_error);
    });
    pipeline::EalSession eal;
    pipeline::MbufTimestamp timestamp;
    const bool started = start_dataplane(eal_request, eal, timestamp, error);
    scan.join();
    if (!scan_ok) {
        populate.join();
        return refuse(scan_error);  // EAL stops with `eal`
    }
    if (!started) {
        std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
        return eal.bad_options() ? 2 : 1;
    }

    int status = 0;
    std::FILE* records = records_to_stdout ? stdout : nullptr;
    auto close_records = [&] {
        if (records && records != stdout) std::fclose(records);
    };
    {
        pipeline::FileSourceConfig source_config;
        source_config.workers = opt.workers;
        source_config.policy = *pipeline::parse_shard_policy(opt.shard);
        auto source =
            pipeline::FileSource::create(std::move(capture), source_config, timestamp, error);
        pipeline::PipelineConfig config;
        config.make_engine = &state::Engine::create;
        // --max-endpoints bounds the whole run's memory: each worker's table gets its share
        // (the shard hash spreads endpoints evenly; table_full in the summary says when a
        // skewed share did not fit).
        config.engine.max_endpoints = (opt.max_endpoints + opt.workers - 1) / opt.workers;
        config.engine.grow_tables = true;  // offline: no frames to drop while a table doubles
        config.engine.idle_timeout_ns = static_cast<uint64_t>(opt.idle_timeout_s * 1e9);
        config.worker.interval_ns = static_cast<uint64_t>(opt.interval_s * 1e9);
        // Housekeeping eight times per timeout: eviction lags idleness by at most 1/8.
        config.worker.tick_ns = config.engine.idle_timeout_ns / 8;
        if (config.engine.idle_timeout_ns && config.worker.tick_ns == 0) config.worker.tick_ns = 1;
        config.full_policy = pipeline::FullPolicy::wait;
        config.record_ring_size = opt.record_ring;
        config.exporter.records = records;
        config.exporter.progress = opt.progress || ::isatty(STDERR_FILENO);
        config.exporter.progress_is_tty = ::isatty(STDERR_FILENO);
        config.exporter.cpus = cpus;
        config.exporter.summary = !opt.quiet;
        config.exporter.idle_timeout_ns = config.engine.idle_timeout_ns;
        config.exporter.tick_ns = config.worker.tick_ns;
        config.exporter.stop_on_write_error = true;
        std::unique_ptr<pipeline::Pipeline> pipe;
        if (source) pipe = pipeline::Pipeline::create(config, *source, timestamp, error);
        if (!source || !pipe) {
            populate.join();  // before the mapping goes with `capture` or `source`
            std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
            return 1;
        }
        // Started: now the records file may be opened (and truncated).
        if (opt.records_given && !records_to_stdout) {
            records = open_output("--records", opt.records, opt.file, error);
            if (!records) {
                populate.join();
                return refuse(error);
            }
            pipe->exporter().set_records(records);
        }

        const auto start = std::chrono::steady_clock::now();
        // A stop signal stops the reader (atomics only) and the normal drain flushes
        // everything. A closed records pipe (`| head`) becomes a write error: the exporter
        // stops the reader, the workers drain and EAL still cleans up.
        install_stop_signals(*source);
        if (!pipe->launch(error)) {
            std::fprintf(stderr, "%s: %s\n", kName, error.c_str());
            status = 1;
        }
        std::string walk_error;
        const bool complete = source->run(walk_error);
        populate.join();
        pipe->wait();
        restore_stop_signals();
        const int signal = stop_signal();
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        // A capture cut short (still being written, copied partially) is ordinary: warn
        // and keep the results. A corrupt one, or one that shrank while it was read, is bad
        // input: the same results, exit 2.
        if (!complete) {
            std::fprintf(stderr, "%s: %s%s; the %llu frames before it were analysed\n", kName,
                         source->truncated() ? "warning: " : "", walk_error.c_str(),
                         static_cast<unsigned long long>(source->progress().frames));
            if (!source->truncated()) status = 2;
        }
        exporter::SummaryCounts totals = pipe->totals(wall_s);
        totals.signal = signal_name(signal);
        exporter::RecordWriter& writer = pipe->exporter().writer();
        writer.write_summary(totals);
        if (!writer.flush()) {
            std::fprintf(stderr, "%s: writing records to %s failed: %s\n", kName,
                         records_to_stdout ? "stdout" : opt.records.c_str(), std::strerror(errno));
            status = 1;
        }
        if (!opt.quiet) {
            exporter::RunInfo info = pipe->run_info();
            info.input = opt.file;
            info.shard_policy = opt.shard;
            pipe->exporter().summary().render(summary_out, totals, info);
            if (std::fflush(summary_out) != 0 || std::ferror(summary_out)) {
                std::fprintf(stderr, "%s: writing the summary to %s failed: %s\n", kName,
                             summary_out == stdout ? "stdout" : "stderr", std::strerror(errno));
                status = 1;
            }
        }
        if (source->oversize_frames())
            std::fprintf(stderr, "%s: warning: %llu frames longer than 65535 bytes were cut\n",
                         kName, static_cast<unsigned long long>(source->oversize_frames()));
        if (signal != 0) {
            std::fprintf(stderr, "%s: interrupted by %s after %llu frames\n", kName,
                         signal_name(signal),
                         static_cast<unsigned long long>(source->progress().frames));
            if (status == 0) status = 128 + signal;
        }
        pipe.reset();    // engines and rings before the mbufs' pool
        source.reset();  // pool and mapping before EAL
    }
    close_records();
    eal.stop();
    return status;
}

}  // namespace insert::tools
