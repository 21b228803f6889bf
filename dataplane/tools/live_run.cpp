// insert-dp inline / monitor: the live appliance over ethdev ports, through the same workers,
// engine and exporter as replay (dataplane/pipeline); only the PacketSource differs.
#include "dataplane/tools/live_run.hpp"

#include <linux/if_ether.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/live_view.hpp"
#include "dataplane/pipeline/pci_port.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/pipeline/port_config.hpp"
#include "dataplane/pipeline/qp_board.hpp"
#include "dataplane/pipeline/resident_memory.hpp"
#include "dataplane/pipeline/telemetry.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/tools/dataplane_start.hpp"
#include "dataplane/tools/memory_budget.hpp"
#include "dataplane/tools/option_checks.hpp"
#include "dataplane/tools/output_file.hpp"
#include "dataplane/tools/stop_signals.hpp"

namespace insert::tools {

namespace {

constexpr unsigned kMaxWorkers = 64;
constexpr uint64_t kMiB = 1u << 20;

struct LiveOptions {
    std::vector<std::string> ifaces;
    std::vector<std::string> vdevs;
    std::vector<std::string> pci;
    unsigned workers = 1;
    bool records_given = false;
    std::string records;
    double interval_s = 1;
    std::string offload = "auto";
    std::string shard = "ip-pair";
    uint32_t max_endpoints = 1u << 20;
    double idle_timeout_s = 60;
    unsigned record_ring = 16384;
    std::string record_full = "wait";
    double duration_s = 0;
    bool hugepages = false;
    bool quiet = false;
    bool no_view = false;
    bool no_hairpin = false;
    std::vector<std::string> eal_args;
};

constexpr const char* kInlineExamples = R"(
Examples:
  insert-dp inline --iface veth-a --iface veth-b --records live.jsonl
      bump in the wire between two Linux interfaces (af_packet, settings from the MTU)
  insert-dp inline --iface eth1 --iface eth2 --workers 2 --interval 5 --offload auto
      two workers; RoCE spread by symmetric RSS (hardware rte_flow or its emulation)
  insert-dp inline --port 0000:03:00.0 --port 0000:03:00.1 --offload require -- -l 0-2
      two NIC ports through their PMD (needs hugepages); fail unless the NIC takes the rules
  insert-dp inline --vdev net_ring0 --vdev net_ring1 --duration 10
      any EAL virtual device

Stop with Ctrl-C or SIGTERM (or SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): receiving stops,
workers and rings drain, every record is written whole, the summary (its "signal" names
the signal) is printed, exit 0. Live statistics: DPDK telemetry commands
/insert/stats /insert/ports /insert/workers /insert/top_qps /insert/offload
(dpdk-telemetry.py -f FILE_PREFIX), and a live view when stdout is a terminal.
Exit status: 0 done, 2 bad options or configuration, 1 runtime failure.
)";

constexpr const char* kMonitorExamples = R"(
Examples:
  insert-dp monitor --iface span0 --records mirror.jsonl
      receive-only telemetry on a mirror (SPAN/TAP) port
  insert-dp monitor --iface tap-a --iface tap-b --workers 2
      the two directions of a link from two taps (connection affinity across ports)

Stop with Ctrl-C or SIGTERM (or SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): workers and rings
drain, every record is written whole, the summary names the signal, exit 0.
Exit status: 0 done, 2 bad options or configuration, 1 runtime failure.
)";

std::atomic<pipeline::PacketSource*> g_source{nullptr};

void stop_source() {
    if (pipeline::PacketSource* s = g_source.load()) s->stop();
}

void on_alarm(int) {  // --duration: the run's planned end, not an interruption
    stop_source();
}

void install_signals() {
    install_stop_signals(stop_source);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
}

void restore_signals() {
    restore_stop_signals();
    std::signal(SIGALRM, SIG_DFL);
}

// The same port twice (`--iface a1 --iface a1`) would open two sockets on one interface
// and forward every frame back where it came from.
bool find_duplicate(const std::vector<std::string>& names, std::string& dup) {
    for (std::size_t i = 0; i < names.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (names[i] == names[j]) {
                dup = names[i];
                return true;
            }
    return false;
}

// 0 parsed, 1 --help printed, 2 error printed.
int parse(const char* name, pipeline::PortMode mode, int argc, char** argv, LiveOptions& opt) {
    std::vector<std::string> args;
    split_eal_args(argc, argv, args, opt.eal_args);
    const bool is_inline = mode == pipeline::PortMode::inline_pair;
    CLI::App app(is_inline ? "Inline RoCEv2 telemetry: forward between two ports, observe RoCE"
                           : "Receive-only RoCEv2 telemetry on mirror ports",
                 name);
    app.footer(is_inline ? kInlineExamples : kMonitorExamples);
    app.add_option("--iface", opt.ifaces, "Linux interface (af_packet PMD); repeat per port");
    app.add_option("--vdev", opt.vdevs, "EAL virtual device, e.g. net_ring0 or net_pcap0,iface=x");
    app.add_option("--port", opt.pci, "PCI address of a NIC port (needs hugepages)");
    app.add_option("--workers", opt.workers, "worker lcores (default 1)")
        ->check(CLI::Range(1u, kMaxWorkers));
    CLI::Option* records = app.add_option("--records", opt.records,
                                          "write JSON Lines records to OUT, or - for stdout");
    app.add_option("--interval", opt.interval_s,
                   "periodic qp records every S seconds (default 1, at least 0.0001)")
        ->check(seconds_between(kMinInterval, kMaxDuration));
    app.add_option("--offload", opt.offload, "rte_flow steering: off, auto (default), require")
        ->check(CLI::IsMember({"off", "auto", "require"}));
    app.add_option("--shard", opt.shard,
                   "software RSS key with --offload off: ip-pair, ip-pair-sport")
        ->check(CLI::IsMember({"ip-pair", "ip-pair-sport"}));
    app.add_option("--max-endpoints", opt.max_endpoints,
                   "endpoint table capacity per worker (default 1048576); its memory is "
                   "made resident and locked at start, and the start line says how much; "
                   "refused when it would not leave the system room")
        ->check(CLI::Range(1u, 1u << 28));
    app.add_option("--idle-timeout", opt.idle_timeout_s,
                   "evict endpoints idle for S seconds (default 60)")
        ->check(seconds_between(kMinIdleTimeout, kMaxIdleTimeout));
    app.add_option("--record-ring", opt.record_ring,
                   "records per worker ring, a power of two (default 16384)")
        ->check(CLI::Range(16u, 1u << 22));
    app.add_option("--record-full", opt.record_full,
                   "when a record ring is full: wait (default; lossless) or drop (counted)")
        ->check(CLI::IsMember({"wait", "drop"}));
    app.add_option("--duration", opt.duration_s, "stop by itself after S seconds")
        ->check(seconds_between(1e-3, kMaxDuration));
    app.add_flag("--hugepages", opt.hugepages, "require hugepages (implied by --port)");
    app.add_flag("--no-view", opt.no_view, "no live terminal view");
    if (is_inline)
        app.add_flag("--no-hairpin", opt.no_hairpin,
                     "forward non-RoCE frames in software even where both NICs can hairpin");
    app.add_flag("--quiet", opt.quiet, "no live view and no terminal summary");
    if (const int rc = parse_args(app, args, name); rc != 0) return rc;
    opt.records_given = records->count() > 0;
    std::string dup;
    for (const auto& [option, names] :
         {std::pair<const char*, const std::vector<std::string>*>{"--iface", &opt.ifaces},
          {"--vdev", &opt.vdevs},
          {"--port", &opt.pci}})
        if (find_duplicate(*names, dup)) {
            std::fprintf(stderr, "%s: %s %s given twice (each port once)\n", name, option,
                         dup.c_str());
            return 2;
        }
    if ((opt.record_ring & (opt.record_ring - 1)) != 0) {
        std::fprintf(stderr, "%s: --record-ring %u is not a power of two\n", name, opt.record_ring);
        return 2;
    }
    return 0;
}

bool has_eal_option(const std::vector<std::string>& args, const std::string& opt) {
    for (const std::string& a : args)
        if (a == opt || a.rfind(opt + "=", 0) == 0) return true;
    return false;
}

// No rights to open packet sockets fails here with one line, not deep inside EAL.
bool can_open_packet_socket(std::string& why) {
    const int fd = ::socket(AF_PACKET, SOCK_RAW, 0);
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    why = std::strerror(errno);
    return false;
}

}  // namespace

int run_live(pipeline::PortMode mode, int argc, char** argv) {
    const bool is_inline = mode == pipeline::PortMode::inline_pair;
    const char* name = is_inline ? "insert-dp inline" : "insert-dp monitor";
    LiveOptions opt;
    if (const int rc = parse(name, mode, argc, argv, opt); rc != 0) return rc == 1 ? 0 : 2;
    const auto fail = [&](const std::string& line) {
        std::fprintf(stderr, "%s: %s\n", name, line.c_str());
        return 2;
    };

    // ---- Everything that can be refused, before EAL starts.
    const std::size_t nports = opt.ifaces.size() + opt.vdevs.size() + opt.pci.size();
    if (is_inline && nports != 2)
        return fail("needs exactly two ports (--iface, --vdev or --port), got " +
                    std::to_string(nports));
    if (nports == 0) return fail("needs at least one port (--iface, --vdev or --port)");
    std::string error;
    uint32_t max_mtu = 0, min_mtu = UINT32_MAX;
    pipeline::AfPacketGeometry geometry;
    for (const std::string& iface : opt.ifaces) {
        uint32_t mtu = 0;
        if (!pipeline::interface_mtu(iface, mtu, error)) return fail(error);
        max_mtu = std::max(max_mtu, mtu);
        min_mtu = std::min(min_mtu, mtu);
    }
    if (!opt.ifaces.empty()) {
        std::string why;
        if (!can_open_packet_socket(why))
            return fail("no permission to open packet sockets on " + opt.ifaces.front() + " (" +
                        why + "): run as root or with CAP_NET_RAW");
        geometry = pipeline::af_packet_geometry(max_mtu);
        if (!pipeline::check_geometry(geometry, error)) return fail(error);
        if (is_inline && min_mtu != max_mtu)
            std::fprintf(stderr,
                         "%s: warning: MTUs differ (%u and %u); frames above %u cannot leave "
                         "the smaller side and are counted as Tx errors\n",
                         name, min_mtu, max_mtu, min_mtu);
    }
    for (std::string& p : opt.pci) {
        std::string canonical;
        if (!pipeline::check_pci_port(p, canonical, error)) return fail(error);
        p = canonical;
    }
    if (std::string dup; find_duplicate(opt.pci, dup))  // two spellings of one address
        return fail("--port " + dup + " given twice (each port once)");
    if (!opt.pci.empty() && ::geteuid() != 0) return fail("NIC ports (--port) need root");
    const auto offload = offload::parse_offload_mode(opt.offload);

    pipeline::PortSourceConfig pc;
    pc.mode = mode;
    pc.workers = opt.workers;
    pc.offload = *offload;
    pc.hairpin = !opt.no_hairpin;
    pc.policy = *pipeline::parse_shard_policy(opt.shard);
    pc.max_frame = std::max<uint32_t>(opt.ifaces.empty() ? 1518 : geometry.max_frame(), 1518);
    pc.mbuf_data_room =
        std::max<uint32_t>(opt.ifaces.empty() ? RTE_MBUF_DEFAULT_BUF_SIZE : geometry.mbuf_data_room,
                           RTE_MBUF_DEFAULT_BUF_SIZE);
    if (opt.pci.empty()) {
        // Software ports do not pre-post receive buffers: smaller pools do.
        pc.rx_desc = 512;
        pc.tx_desc = 512;
    }
    std::vector<std::string> eal_args = opt.eal_args;
    for (std::size_t i = 0; i < opt.ifaces.size(); ++i) {
        const std::string dev = "net_af_packet" + std::to_string(i);
        eal_args.push_back("--vdev=" +
                           pipeline::af_packet_devargs(dev, opt.ifaces[i], 1, geometry));
        pc.devices.push_back(dev);
    }
    for (const std::string& v : opt.vdevs) {
        eal_args.push_back("--vdev=" + v);
        pc.devices.push_back(v.substr(0, v.find(',')));
    }
    for (const std::string& p : opt.pci) {
        eal_args.push_back("-a");
        eal_args.push_back(p);
        pc.devices.push_back(p);
    }
    if (!has_eal_option(eal_args, "--no-telemetry") && !has_eal_option(eal_args, "--telemetry"))
        eal_args.push_back("--telemetry");
    if (!has_eal_option(eal_args, "--log-level")) eal_args.push_back("--log-level=4");

    const uint64_t queues = opt.workers + 1;
    const uint64_t mbufs =
        nports * queues * (pc.rx_desc + pc.tx_desc) + opt.workers * pc.worker_ring + 16384;
    const uint64_t memory = mbufs * (pc.mbuf_data_room + 256) +
                            uint64_t{opt.workers} * opt.record_ring * sizeof(state::Record) +
                            64 * kMiB;
    const bool need_huge = opt.hugepages || !opt.pci.empty();
    if (need_huge) {
        if (has_eal_option(eal_args, "--no-huge"))
            return fail("--hugepages/--port conflict with --no-huge");
        const uint64_t free = pipeline::free_hugepage_bytes();
        if (free < memory + 64 * kMiB)
            return fail(
                "hugepages missing: " + std::to_string((memory + 64 * kMiB) / kMiB) +
                " MiB needed, " + std::to_string(free / kMiB) +
                " MiB free (echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)");
    }

    // The engines' tables are locked resident at start: they must leave the system room.
    {
        state::EngineConfig engine;
        engine.max_endpoints = opt.max_endpoints;
        const uint64_t per_worker = state::Engine::memory_bytes(engine);
        const uint64_t need = per_worker * opt.workers + (need_huge ? 0 : memory);
        const uint64_t available = available_memory_bytes();
        if (!memory_fits(need, available, true)) {
            uint32_t lo = 0, hi = opt.max_endpoints;  // the most that fit: in [lo, hi)
            while (hi - lo > 1) {
                engine.max_endpoints = lo + (hi - lo) / 2;
                const uint64_t n =
                    state::Engine::memory_bytes(engine) * opt.workers + (need_huge ? 0 : memory);
                (memory_fits(n, available, true) ? lo : hi) = engine.max_endpoints;
            }
            return fail(
                "--max-endpoints " + std::to_string(opt.max_endpoints) + " needs " +
                format_bytes(need) + " resident (" + std::to_string(opt.workers) + " worker" +
                (opt.workers == 1 ? "" : "s") + " x " + format_bytes(per_worker) + " of state" +
                (need_huge ? "" : " and " + format_bytes(memory) + " of buffers") + "), only " +
                format_bytes(available) + " available and the system needs room: at most " +
                std::to_string(lo) + " endpoints per worker fit");
        }
    }

    // Checked now, opened once the ports run: a failed start leaves an existing file alone.
    const bool records_to_stdout = opt.records_given && opt.records == "-";
    if (opt.records_given && !records_to_stdout &&
        !check_output("--records", opt.records, "", error))
        return fail(error);
    std::FILE* records = records_to_stdout ? stdout : nullptr;
    std::FILE* summary_out = records_to_stdout ? stderr : stdout;
    auto close_records = [&] {
        if (records && records != stdout) std::fclose(records);
    };

    // ---- EAL and ports.
    pipeline::EalRequest req;
    req.lcores = opt.workers + 1;
    req.memory_bytes = memory;
    req.want_pci = !opt.pci.empty();
    req.tool = is_inline ? "insert-dp-inline" : "insert-dp-monitor";
    req.user_args = eal_args;
    const std::vector<unsigned> cpus = pipeline::allowed_cpus();
    pipeline::EalSession eal;
    pipeline::MbufTimestamp timestamp;
    if (!start_dataplane(req, eal, timestamp, error)) {
        std::fprintf(stderr, "%s: %s\n", name, error.c_str());
        return eal.bad_options() ? 2 : 1;
    }
    pipeline::register_telemetry();
    const bool locked = pipeline::lock_future_memory(name);

    int status = 0;
    {
        auto source = pipeline::PortSource::create(pc, timestamp, error);
        if (!source) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            return 2;
        }
        pipeline::PipelineConfig config;
        config.make_engine = &pipeline::QpBoards::make_engine_with_board;
        config.engine.max_endpoints = opt.max_endpoints;
        config.engine.idle_timeout_ns = static_cast<uint64_t>(opt.idle_timeout_s * 1e9);
        config.worker.interval_ns = static_cast<uint64_t>(opt.interval_s * 1e9);
        config.worker.tick_ns = std::max<uint64_t>(config.engine.idle_timeout_ns / 8, 1);
        // An idle worker spins, then yields, before it sleeps: frames that arrive on a
        // quiet link are not held for a sleep or another task's time slice (docs/live.md
        // "Time").
        config.worker.idle = pipeline::kLivePollBackoff;
        config.full_policy =
            opt.record_full == "drop" ? pipeline::FullPolicy::drop : pipeline::FullPolicy::wait;
        config.record_ring_size = opt.record_ring;
        config.exporter.records = records;
        config.exporter.cpus = cpus;
        config.exporter.bounded_memory = true;  // runs for months: nothing kept per gone endpoint
        pipeline::QpBoards boards(opt.workers);
        boards.install();
        auto pipe = pipeline::Pipeline::create(config, *source, timestamp, error);
        boards.uninstall();
        if (!pipe) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            return 1;
        }
        if (opt.records_given && !records_to_stdout) {
            records = open_output("--records", opt.records, "", error);
            if (!records) return fail(error);
            pipe->exporter().set_records(records);
        }
        pipeline::LiveStats stats(is_inline ? "inline" : "monitor", *pipe, source.get(), &boards);
        pipeline::publish(&stats);

        g_source.store(source.get());
        install_signals();
        if (opt.duration_s > 0) {
            itimerval t{};
            t.it_value.tv_sec = static_cast<time_t>(opt.duration_s);
            t.it_value.tv_usec = static_cast<suseconds_t>(
                (opt.duration_s - static_cast<double>(t.it_value.tv_sec)) * 1e6);
            setitimer(ITIMER_REAL, &t, nullptr);
        }
        const auto start = std::chrono::steady_clock::now();
        if (!pipe->launch(error)) {
            std::fprintf(stderr, "%s: %s\n", name, error.c_str());
            status = 1;
        }
        {
            std::string ports;
            for (const pipeline::PortInfo& p : source->ports())
                ports += (ports.empty() ? ""
                          : is_inline   ? " <-> "
                                        : ", ") +
                         p.name + " (" + p.driver + ")";
            const char* steer = source->steer() == pipeline::SteerMode::hardware
                                    ? "hardware rte_flow"
                                : source->steer() == pipeline::SteerMode::direct ? "direct"
                                                                                 : "dispatch";
            const bool emulated = source->offload(0).emulated;
            const uint64_t state_bytes =
                uint64_t{pipe->engine(0).bytes_per_endpoint()} * opt.max_endpoints;
            std::fprintf(stderr, "%s: state for %u endpoints per worker: %llu MiB each, %s\n", name,
                         opt.max_endpoints, static_cast<unsigned long long>(state_bytes / kMiB),
                         locked ? "resident (locked)" : "faulted in on use");
            std::fprintf(stderr,
                         "%s: running on %s, %u worker%s, steering %s%s, telemetry prefix %s\n",
                         name, ports.c_str(), opt.workers, opt.workers == 1 ? "" : "s", steer,
                         emulated ? " (emulated offload)" : "", eal.plan().file_prefix.c_str());
        }
        const bool view_on =
            !opt.quiet && !opt.no_view && !records_to_stdout && ::isatty(STDOUT_FILENO);
        pipeline::LiveView view(stats, stdout);
        if (view_on) view.start();

        std::string run_error;
        source->run(run_error);
        pipe->wait();
        view.stop();
        {
            itimerval off{};
            setitimer(ITIMER_REAL, &off, nullptr);
        }
        restore_signals();
        g_source.store(nullptr);
        const int signal = stop_signal();
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

        const pipeline::LiveTotals t = stats.totals();
        pipeline::publish(nullptr);
        exporter::SummaryCounts totals = stats.summary(wall_s);
        totals.signal = signal_name(signal);
        exporter::RecordWriter& writer = pipe->exporter().writer();
        writer.write_summary(totals);
        if (!writer.flush()) {
            std::fprintf(stderr, "%s: writing records failed: %s\n", name, std::strerror(errno));
            status = 1;
        }
        if (!opt.quiet) {
            exporter::RunInfo info = pipe->run_info();
            info.mode = is_inline ? "inline" : "monitor";
            for (const pipeline::PortInfo& p : source->ports())
                info.input += (info.input.empty() ? "" : ", ") + p.name;
            info.shard_policy =
                source->steer() == pipeline::SteerMode::dispatch && !source->offload(0).emulated
                    ? opt.shard
                    : "symmetric RSS (rte_flow plan)";
            pipe->exporter().summary().render(summary_out, totals, info);
            if (std::fflush(summary_out) != 0 || std::ferror(summary_out)) {
                std::fprintf(stderr, "%s: writing the summary failed: %s\n", name,
                             std::strerror(errno));
                status = 1;
            }
        }
        // Worker CPU time: frames per CPU-second is a worker core's capacity even on a
        // shared machine, where the wall-clock rate is also the neighbours' doing.
        double worker_cpu_s = 0;
        for (const double s : pipe->run_info().worker_cpu_s) worker_cpu_s += s;
        std::fprintf(
            stderr,
            "%s: %llu frames received, %llu forwarded (%llu passthrough), tx retries %llu, "
            "tx dropped %llu, rx missed %llu, records dropped %llu, worker CPU %.3f s\n",
            name, static_cast<unsigned long long>(t.frames),
            static_cast<unsigned long long>(is_inline ? t.tx : 0),
            static_cast<unsigned long long>(t.passthrough),
            static_cast<unsigned long long>(t.tx_retries),
            static_cast<unsigned long long>(t.tx_dropped),
            static_cast<unsigned long long>(t.rx_missed),
            static_cast<unsigned long long>(t.records_dropped), worker_cpu_s);
        pipe.reset();
        source.reset();
    }
    close_records();
    eal.stop();
    return status;
}

}  // namespace insert::tools
