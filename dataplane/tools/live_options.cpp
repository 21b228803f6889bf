#include "dataplane/tools/live_options.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "dataplane/common/http_server.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/tools/option_checks.hpp"

namespace insert::tools {

namespace {

constexpr unsigned kMaxWorkers = 64;
// /var/run/dpdk/NAME/dpdk_telemetry.v2 must fit a Unix socket address (108 bytes).
constexpr std::size_t kMaxTelemetryPrefix = 64;

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
  insert-dp inline --iface eth1 --iface eth2 --records unix:/run/insert/correlator.sock
      records to insert-correlate --listen, reconnected when it restarts
  insert-dp inline --iface eth1 --iface eth2 --nats nats://bus1:4222,nats://bus2:4222
      records to NATS JetStream by host partition (docs/scale-out.md), retried while away

Stop with Ctrl-C or SIGTERM (or SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): receiving stops,
workers and rings drain, every record is written whole, the summary (its "signal" names
the signal) is printed, exit 0. Live statistics: DPDK telemetry commands
/insert/stats /insert/ports /insert/workers /insert/top_qps /insert/offload
(dpdk-telemetry.py -f FILE_PREFIX; --telemetry-prefix fixes it), Prometheus /metrics
with --http, and a live view when stdout is a terminal.
  insert-dp inline --iface eth1 --iface eth2 --http 127.0.0.1:9464 --telemetry-prefix dp0
      /metrics on port 9464; dpdk-telemetry.py -f dp0 finds /var/run/dpdk/dp0
Exit status: 0 done, 2 bad options or configuration, 1 runtime failure.
)";

constexpr const char* kMonitorExamples = R"(
Examples:
  insert-dp monitor --iface span0 --records mirror.jsonl
      receive-only telemetry on a mirror (SPAN/TAP) port
  insert-dp monitor --iface tap-a --iface tap-b --workers 2
      the two directions of a link from two taps (connection affinity across ports)
  insert-dp monitor --iface span0 --http :9464 --telemetry-prefix mirror0
      Prometheus /metrics on every address, port 9464; DPDK telemetry under a fixed prefix
  insert-dp monitor --iface span0 --records unix:/run/insert/correlator.sock
      records to insert-correlate --listen, reconnected when it restarts
  insert-dp monitor --iface span0 --records mirror.jsonl --nats nats://bus:4222
      the records to a file and to NATS JetStream (docs/scale-out.md)

Stop with Ctrl-C or SIGTERM (or SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): workers and rings
drain, every record is written whole, the summary names the signal, exit 0.
Exit status: 0 done, 2 bad options or configuration, 1 runtime failure.
)";

// --http and --telemetry-prefix: the address's form, the server built in; a prefix that
// names one directory in /var/run/dpdk, and not set twice through EAL's own options.
bool check_service_options(const LiveOptions& opt, std::string& error) {
    if (!opt.http.empty()) {
        std::string host;
        uint16_t port = 0;
        if (!http::parse_address(opt.http, host, port, error)) {
            error = "--http " + error;
            return false;
        }
        if (!http::available()) {
            error =
                "--http: this insert-dp was built without libmicrohttpd (install "
                "libmicrohttpd-dev - scripts/setup.sh - and rebuild)";
            return false;
        }
    }
    if (!opt.telemetry_prefix.empty()) {
        const std::string& p = opt.telemetry_prefix;
        // One directory under /var/run/dpdk (any printable name without '/': an interface
        // pair such as eth1:eth2 included) whose socket path fits a Unix socket address.
        bool ok = p.size() <= kMaxTelemetryPrefix && p != "." && p != "..";
        for (const char c : p) ok = ok && c > ' ' && c < 127 && c != '/';
        if (!ok) {
            error = "--telemetry-prefix '" + p + "': a name of 1 to " +
                    std::to_string(kMaxTelemetryPrefix) +
                    " printable characters without '/' or spaces (a directory in /var/run/dpdk)";
            return false;
        }
        for (const std::string& a : opt.eal_args) {
            if (a == "--file-prefix" || a.rfind("--file-prefix=", 0) == 0) {
                error = "--telemetry-prefix and the EAL option --file-prefix: give one of them";
                return false;
            }
            if (a == "--no-telemetry") {
                error =
                    "--telemetry-prefix with the EAL option --no-telemetry: there would be "
                    "no telemetry socket";
                return false;
            }
        }
    }
    return true;
}

}  // namespace

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

int parse_live_options(const char* name, ports::PortMode mode, int argc, char** argv,
                       LiveOptions& opt) {
    std::vector<std::string> args;
    split_eal_args(argc, argv, args, opt.eal_args);
    const bool is_inline = mode == ports::PortMode::inline_pair;
    CLI::App app(is_inline ? "Inline RoCEv2 telemetry: forward between two ports, observe RoCE"
                           : "Receive-only RoCEv2 telemetry on mirror ports",
                 name);
    app.footer(is_inline ? kInlineExamples : kMonitorExamples);
    app.add_option("--iface", opt.ifaces, "Linux interface (af_packet PMD); repeat per port");
    app.add_option("--vdev", opt.vdevs, "EAL virtual device, e.g. net_ring0 or net_pcap0,iface=x");
    app.add_option("--port", opt.pci, "PCI address of a NIC port (needs hugepages)");
    app.add_option("--workers", opt.workers, "worker lcores (default 1)")
        ->check(CLI::Range(1u, kMaxWorkers));
    CLI::Option* records =
        app.add_option("--records", opt.records,
                       "write JSON Lines records (docs/records.md) to OUT, - for stdout, or "
                       "unix:PATH for "
                       "insert-correlate --listen PATH (started before it or not, reconnected "
                       "when it restarts)");
    CLI::Option* records_buffer =
        app.add_option("--records-buffer", opt.records_buffer,
                       "with --records unix:PATH: bytes of records kept while the collector is "
                       "away or behind (default 16777216); more are dropped and counted")
            ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 30));
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
    CLI::Option* http =
        app.add_option("--http", opt.http,
                       "serve Prometheus /metrics on ADDR:PORT (127.0.0.1:9464, [::1]:9464, :9464 "
                       "for every address)");
    CLI::Option* prefix =
        app.add_option("--telemetry-prefix", opt.telemetry_prefix,
                       "EAL file prefix NAME instead of a unique one: the DPDK telemetry socket is "
                       "then /var/run/dpdk/NAME/dpdk_telemetry.v2 (dpdk-telemetry.py -f NAME)");
    add_nats_options(app, opt.nats);
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
    std::string error;
    if (records_buffer->count() && opt.records.rfind("unix:", 0) != 0)
        error = "--records-buffer: needs --records unix:PATH";
    if (http->count() && opt.http.empty()) error = "--http needs ADDR:PORT (e.g. 127.0.0.1:9464)";
    if (prefix->count() && opt.telemetry_prefix.empty()) error = "--telemetry-prefix needs a name";
    if (!error.empty() || !check_service_options(opt, error)) {
        std::fprintf(stderr, "%s: %s\n", name, error.c_str());
        return 2;
    }
    return 0;
}

}  // namespace insert::tools
