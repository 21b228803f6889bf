// insert-dp inline / monitor: the live appliance over ethdev ports, through the same workers,
// engine and exporter as replay (dataplane/pipeline); only the PacketSource differs. The
// steps: options (live_options.cpp), checks and plan before EAL (live_plan.cpp), EAL and
// ports, the pipeline, the run until a signal or --duration, and the report.
#include "dataplane/tools/live_run.hpp"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/common/http_server.hpp"
#include "dataplane/common/version.hpp"
#include "dataplane/live/live_view.hpp"
#include "dataplane/live/metrics.hpp"
#include "dataplane/live/qp_board.hpp"
#include "dataplane/live/telemetry.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/pipeline/resident_memory.hpp"
#include "dataplane/ports/port_source.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/tools/dataplane_start.hpp"
#include "dataplane/tools/live_options.hpp"
#include "dataplane/tools/live_plan.hpp"
#include "dataplane/tools/output_file.hpp"
#include "dataplane/tools/pipeline_config.hpp"
#include "dataplane/tools/records_nats.hpp"
#include "dataplane/tools/records_socket.hpp"
#include "dataplane/tools/stop_signals.hpp"

namespace insert::tools {

namespace {

constexpr uint64_t kMiB = 1u << 20;
constexpr auto kRecordsFlush = std::chrono::milliseconds(100);
// --records unix:PATH at the end: how long what waits may take to reach the collector; and
// --nats, the bus.
constexpr auto kSocketFinish = std::chrono::seconds(2);
constexpr auto kNatsFinish = std::chrono::seconds(2);

void on_alarm(int) {  // --duration: the run's planned end, not an interruption
    request_stop();
}

void install_signals(pipeline::PacketSource& source, double duration_s) {
    install_stop_signals(source);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    if (duration_s > 0) {
        itimerval t{};
        t.it_value.tv_sec = static_cast<time_t>(duration_s);
        t.it_value.tv_usec =
            static_cast<suseconds_t>((duration_s - static_cast<double>(t.it_value.tv_sec)) * 1e6);
        setitimer(ITIMER_REAL, &t, nullptr);
    }
}

void restore_signals() {
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    restore_stop_signals();
    std::signal(SIGALRM, SIG_DFL);
}

pipeline::PipelineConfig pipeline_config(const LiveOptions& opt, std::FILE* records,
                                         const std::vector<unsigned>& cpus) {
    pipeline::PipelineConfig config = pipeline_config_from({
        .endpoints_per_worker = opt.max_endpoints,
        .idle_timeout_s = opt.idle_timeout_s,
        .interval_s = opt.interval_s,
        .record_ring = opt.record_ring,
        .full_policy =
            opt.record_full == "drop" ? pipeline::FullPolicy::drop : pipeline::FullPolicy::wait,
        .records = records,
        .cpus = cpus,
    });
    // An idle worker spins, then yields, before it sleeps: frames that arrive on a quiet
    // link are not held for a sleep or another task's time slice (docs/live.md "Time").
    config.worker.idle = pipeline::kLivePollBackoff;
    config.exporter.bounded_memory = true;  // runs for months: nothing kept per gone endpoint
    // A quiet link's records reach the file, pipe or socket within this, not when 64 KiB of
    // them have come (the correlator waits --max-delay, 1 s, for a producer).
    config.exporter.flush_period = kRecordsFlush;
    return config;
}

// The start lines: the state's memory, the ports and how frames reach the workers.
void print_start(const char* name, bool is_inline, const LiveOptions& opt,
                 const ports::PortSource& source, const pipeline::Pipeline& pipe, bool locked,
                 const std::string& file_prefix) {
    std::string list;
    for (const ports::PortInfo& p : source.ports())
        list += (list.empty() ? "" : is_inline ? " <-> " : ", ") + p.name + " (" + p.driver + ")";
    const char* steer = source.steer() == ports::SteerMode::hardware ? "hardware rte_flow"
                        : source.steer() == ports::SteerMode::direct ? "direct"
                                                                     : "dispatch";
    const bool emulated = source.offload(0).emulated;
    const uint64_t state_bytes = uint64_t{pipe.engine(0).bytes_per_endpoint()} * opt.max_endpoints;
    std::fprintf(stderr, "%s: state for %u endpoints per worker: %llu MiB each, %s\n", name,
                 opt.max_endpoints, static_cast<unsigned long long>(state_bytes / kMiB),
                 locked ? "resident (locked)" : "faulted in on use");
    std::fprintf(stderr, "%s: running on %s, %u worker%s, steering %s%s, telemetry prefix %s\n",
                 name, list.c_str(), opt.workers, opt.workers == 1 ? "" : "s", steer,
                 emulated ? " (emulated offload)" : "", file_prefix.c_str());
}

// The summary record, the terminal summary and the forwarding totals. Returns the exit
// status so far (1 when an output failed).
int report(const char* name, bool is_inline, const LiveOptions& opt,
           const ports::PortSource& source, pipeline::Pipeline& pipe, const live::LiveStats& stats,
           const live::LiveTotals& t, double wall_s, int signal, std::FILE* summary_out,
           RecordsSocket* socket, RecordsNats* nats) {
    int status = 0;
    exporter::SummaryCounts totals = stats.summary(wall_s);
    totals.signal = signal_name(signal);
    if (socket) {  // what the summary can say: the records it follows
        totals.unix_socket = true;
        totals.unix_connects = socket->counts().connects;
        totals.unix_dropped = socket->counts().dropped;
    }
    exporter::RecordWriter& writer = pipe.exporter().writer();
    writer.write_summary(totals);
    if (!writer.flush()) {
        std::fprintf(stderr, "%s: writing records failed: %s\n", name, std::strerror(errno));
        status = 1;
    }
    if (nats) nats->finish(kNatsFinish);
    if (socket) socket->finish(kSocketFinish);
    if (!opt.quiet) {
        exporter::RunInfo info = pipe.run_info();
        info.mode = is_inline ? "inline" : "monitor";
        for (const ports::PortInfo& p : source.ports())
            info.input += (info.input.empty() ? "" : ", ") + p.name;
        info.shard_policy =
            source.steer() == ports::SteerMode::dispatch && !source.offload(0).emulated
                ? opt.shard
                : "symmetric RSS (rte_flow plan)";
        pipe.exporter().summary().render(summary_out, totals, info);
        if (std::fflush(summary_out) != 0 || std::ferror(summary_out)) {
            std::fprintf(stderr, "%s: writing the summary failed: %s\n", name,
                         std::strerror(errno));
            status = 1;
        }
    }
    // Worker CPU time: frames per CPU-second is a worker core's capacity even on a shared
    // machine, where the wall-clock rate is also the neighbours' doing.
    double worker_cpu_s = 0;
    for (const double s : pipe.run_info().worker_cpu_s) worker_cpu_s += s;
    std::fprintf(stderr,
                 "%s: %llu frames received, %llu forwarded (%llu passthrough), tx retries %llu, "
                 "tx dropped %llu, rx missed %llu, records dropped %llu, worker CPU %.3f s\n",
                 name, static_cast<unsigned long long>(t.frames),
                 static_cast<unsigned long long>(is_inline ? t.tx : 0),
                 static_cast<unsigned long long>(t.passthrough),
                 static_cast<unsigned long long>(t.tx_retries),
                 static_cast<unsigned long long>(t.tx_dropped),
                 static_cast<unsigned long long>(t.rx_missed),
                 static_cast<unsigned long long>(t.records_dropped), worker_cpu_s);
    if (socket)
        std::fprintf(stderr,
                     "%s: --records %s: %llu connections to the collector, %llu records dropped "
                     "while it was away or behind\n",
                     name, opt.records.c_str(),
                     static_cast<unsigned long long>(socket->counts().connects),
                     static_cast<unsigned long long>(socket->counts().dropped));
    return status;
}

// --http: /metrics of whatever is published (live/metrics.hpp), from the server's own
// thread. Bound before EAL starts, so that an address in use is refused like a bad option.
bool start_http(const char* name, bool is_inline, const LiveOptions& opt, http::HttpServer& server,
                std::string& error) {
    if (opt.http.empty()) return true;
    const std::string_view mode = is_inline ? "inline" : "monitor";
    server.handle("/metrics", [mode] {
        http::Response r;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = live::published_metrics(mode, kVersion);
        return r;
    });
    if (!server.start(opt.http, error)) {
        error = "--http " + error;
        return false;
    }
    std::fprintf(stderr, "%s: metrics on %s/metrics\n", name, server.url().c_str());
    return true;
}

}  // namespace

int run_live(ports::PortMode mode, int argc, char** argv) {
    const bool is_inline = mode == ports::PortMode::inline_pair;
    const char* name = is_inline ? "insert-dp inline" : "insert-dp monitor";
    LiveOptions opt;
    if (const int rc = parse_live_options(name, mode, argc, argv, opt); rc != 0)
        return rc == 1 ? 0 : 2;
    const auto fail = [&](const std::string& line) {
        std::fprintf(stderr, "%s: %s\n", name, line.c_str());
        return 2;
    };

    // Everything that can be refused, before EAL starts.
    std::string error;
    LivePlan plan;
    if (!plan_live(name, mode, opt, plan, error)) return fail(error);
    // Checked now, opened once the ports run: a failed start leaves an existing file alone.
    const bool records_to_stdout = opt.records_to_stdout();
    const std::string socket_path = opt.records_given ? records_socket_path(opt.records) : "";
    if (!socket_path.empty() && !UnixLineSender::valid_path(socket_path, error))
        return fail("--records unix:" + error);
    if (opt.records_given && !records_to_stdout && socket_path.empty() &&
        !check_output("--records", opt.records, "", error))
        return fail(error);
    NatsConfig nats_config;
    if (!nats_config_from(opt.nats, name, default_producer_identity("insert-dp"), nats_config,
                          error))
        return fail(error);
    std::unique_ptr<RecordsNats> nats;  // --nats; in front of the other output
    if (opt.nats.enabled() && !(nats = RecordsNats::create(nats_config, error))) return fail(error);
    std::FILE* records = records_to_stdout ? stdout : nullptr;
    std::FILE* summary_out = records_to_stdout ? stderr : stdout;
    http::HttpServer http_server(name);  // stopped when the run returns, after unpublishing
    if (!start_http(name, is_inline, opt, http_server, error)) return fail(error);
    std::optional<RecordsSocket> socket;  // --records unix:PATH; outlives the pipeline
    auto close_records = [&] {
        if (records && records != stdout && !socket) std::fclose(records);
    };

    // EAL and ports.
    pipeline::EalRequest req;
    req.lcores = opt.workers + 1;
    req.memory_bytes = plan.memory_bytes;
    req.want_pci = !opt.pci.empty();
    req.tool = is_inline ? "insert-dp-inline" : "insert-dp-monitor";
    req.user_args = plan.eal_args;
    const std::vector<unsigned> cpus = pipeline::allowed_cpus();
    pipeline::EalSession eal;
    pipeline::MbufTimestamp timestamp;
    if (!start_dataplane(req, eal, timestamp, error)) {
        std::fprintf(stderr, "%s: %s\n", name, error.c_str());
        return eal.bad_options() ? 2 : 1;
    }
    live::register_telemetry();
    const bool locked = pipeline::lock_future_memory();

    int status = 0;
    {
        auto source = ports::PortSource::create(plan.ports, timestamp, error);
        if (!source) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            return 2;
        }
        pipeline::PipelineConfig config = pipeline_config(opt, records, cpus);
        live::QpBoards boards(opt.workers);
        config.make_engine = boards.factory();
        auto pipe = pipeline::Pipeline::create(config, *source, timestamp, error);
        if (!pipe) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            return 1;
        }
        if (!socket_path.empty()) {
            socket.emplace(socket_path, std::string(name) + ": --records " + opt.records,
                           opt.records_buffer);
            if (!socket->open(error)) return fail(error);
            records = socket->file();
            pipe->exporter().set_records(records);
            pipe->exporter().set_after_flush([&socket] { socket->after_flush(); });
        } else if (opt.records_given && !records_to_stdout) {
            records = open_output("--records", opt.records, "", error);
            if (!records) return fail(error);
            pipe->exporter().set_records(records);
        }
        if (nats) {
            if (!nats->open(records, cpus, error)) return fail(error);
            pipe->exporter().set_records(nats->file());
            // After each periodic flush: the socket (if any), then the bus's batches.
            pipe->exporter().set_after_flush([&socket, &nats] {
                if (socket) socket->after_flush();
                nats->after_flush();
            });
        }
        live::LiveStats stats(is_inline ? "inline" : "monitor", *pipe, source.get(), &boards);
        stats.set_endpoint_capacity(opt.max_endpoints);
        live::publish(&stats);

        install_signals(*source, opt.duration_s);
        const auto start = std::chrono::steady_clock::now();
        if (!pipe->launch(error)) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            status = 1;
        }
        print_start(name, is_inline, opt, *source, *pipe, locked, eal.plan().file_prefix);
        const bool view_on =
            !opt.quiet && !opt.no_view && !records_to_stdout && ::isatty(STDOUT_FILENO);
        live::LiveView view(stats, stdout);
        if (view_on) view.start();

        std::string run_error;
        source->run(run_error);
        pipe->wait();
        view.stop();
        restore_signals();
        const int signal = stop_signal();
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        const live::LiveTotals t = stats.totals();
        live::publish(nullptr);
        status =
            std::max(status, report(name, is_inline, opt, *source, *pipe, stats, t, wall_s, signal,
                                    summary_out, socket ? &*socket : nullptr, nats.get()));
        pipe.reset();
        nats.reset();  // the FILE* in front of records
        source.reset();
    }
    close_records();
    eal.stop();
    return status;
}

}  // namespace insert::tools
