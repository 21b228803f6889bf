#include "correlator/tools/correlate_options.hpp"

#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/alertmanager.hpp"
#include "correlator/usecases/security_rules.hpp"
#include "dataplane/common/http_server.hpp"
#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/version.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace insert::correlate {

namespace {

// HOST=NS with NS a signed integer.
bool parse_offset(const std::string& text, ClockPolicy& policy, std::string& error) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) {
        error = "--clock-offset " + text + ": expected HOST=NS";
        return false;
    }
    int64_t ns = 0;
    const char* first = text.data() + eq + 1;
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, ns);
    if (ec != std::errc() || end != last || first == last) {
        error = "--clock-offset " + text + ": NS must be an integer number of nanoseconds";
        return false;
    }
    const std::string host = text.substr(0, eq);
    if (policy.offsets.count(host)) {
        error = "--clock-offset " + text + ": host " + host + " given twice";
        return false;
    }
    policy.offsets[host] = ns;
    return true;
}

// --listen-group NAME (or a number): the group's id, or an error naming it.
bool resolve_group(CorrelateOptions& out, std::string& error) {
    if (out.listen.empty()) {
        error = "--listen-group: needs --listen PATH";
        return false;
    }
    const std::string& name = out.listen_group;
    std::vector<char> room(16384);
    group entry{};
    group* found = nullptr;
    const int rc = ::getgrnam_r(name.c_str(), &entry, room.data(), room.size(), &found);
    if (rc == 0 && found) {
        out.listen_gid = found->gr_gid;
        return true;
    }
    uint32_t gid = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), gid);
    if (!name.empty() && ec == std::errc() && end == name.data() + name.size()) {
        out.listen_gid = gid;
        return true;
    }
    error = "--listen-group " + name + ": no such group";
    return false;
}

// --http ADDR:PORT: the address's form, and a server built in.
bool check_http(const std::string& address, std::string& error) {
    std::string host;
    uint16_t port = 0;
    if (!http::parse_address(address, host, port, error)) {
        error = "--http " + error;
        return false;
    }
    if (!http::available()) {
        error =
            "--http: this insert-correlate was built without libmicrohttpd (install "
            "libmicrohttpd-dev - scripts/setup.sh - and rebuild)";
        return false;
    }
    return true;
}

// --partitions LIST: "0-3", "0,2,5", "0-3,6" - partitions below `count`, in ascending order.
bool parse_partitions(const std::string& text, unsigned count, std::vector<unsigned>& out,
                      std::string& error) {
    std::vector<bool> chosen(count, false);
    std::string_view rest = text;
    const auto number = [&](std::string_view t, unsigned& n) {
        const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
        return !t.empty() && ec == std::errc() && end == t.data() + t.size();
    };
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        const std::size_t dash = item.find('-');
        unsigned lo = 0, hi = 0;
        const bool ok = dash == std::string_view::npos
                            ? number(item, lo) && number(item, hi)
                            : number(item.substr(0, dash), lo) && number(item.substr(dash + 1), hi);
        if (!ok || lo > hi) {
            error = "--partitions " + text + ": expected partitions as 0-3 or 0,2,5";
            return false;
        }
        if (hi >= count) {
            error = "--partitions " + text + ": partition " + std::to_string(hi) +
                    " is not below --nats-partitions " + std::to_string(count);
            return false;
        }
        for (unsigned k = lo; k <= hi; ++k) chosen[k] = true;
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    for (unsigned k = 0; k < count; ++k)
        if (chosen[k]) out.push_back(k);
    return true;
}

// --nats and its options (docs/scale-out.md "The consumers"); `given` the --nats-* options
// and --partitions on the command line.
bool check_bus(BusOptions& bus, const std::string& partitions, const std::string& given,
               const CorrelateOptions& out, std::string& error) {
    if (bus.url.empty()) {
        if (given.empty()) return true;
        error = given + ": needs --nats URL";
        return false;
    }
    if (!out.inputs.empty() || !out.listen.empty()) {
        error = "--nats: the bus's partitions are the inputs (no files, '-' or --listen with it)";
        return false;
    }
    std::string_view rest = bus.url;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view url = rest.substr(0, comma);
        if (!url.starts_with("nats://") || url.size() <= 7) {
            error = "--nats " + std::string(url) + ": expected nats://HOST:PORT";
            return false;
        }
        bus.servers.emplace_back(url);
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
    if (!nats_client::valid_prefix(bus.subject)) {
        error = "--nats-subject " + bus.subject +
                ": one subject token (letters, digits, '_' and '-') - it also names the stream";
        return false;
    }
    if (bus.partitions < 1 || bus.partitions > 1024) {
        error = "--nats-partitions " + std::to_string(bus.partitions) + ": from 1 to 1024";
        return false;
    }
    if (!(bus.lease_ttl_s >= 2 && bus.lease_ttl_s <= 600)) {
        error = "--lease-ttl " + std::to_string(bus.lease_ttl_s) + ": from 2 to 600 seconds";
        return false;
    }
    if (!bus.instance.empty() &&
        bus.instance.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789._-") != std::string::npos) {
        error = "--instance " + bus.instance + ": letters, digits, '.', '_' and '-' only";
        return false;
    }
    if (partitions.empty()) {
        for (unsigned k = 0; k < bus.partitions; ++k) bus.owned.push_back(k);
        return true;
    }
    return parse_partitions(partitions, bus.partitions, bus.owned, error);
}

// The security rules' table (usecases/security_rules.cpp) as docs/correlation.md shows it:
// a test compares the two.
std::string rules_markdown() {
    std::string out =
        "| rule | severity | counts toward rkey_scan | what it means |\n|---|---|---|---|\n";
    for (const SecurityRule& r : security_rules())
        out += "| `" + std::string(r.name) + "` | " + std::string(r.severity) + " | " +
               (r.feeds_scan ? "yes" : "no") + " | " + std::string(r.meaning) + " |\n";
    return out;
}

}  // namespace

int parse_correlate_options(int argc, char** argv, CorrelateOptions& out, std::string& error) {
    CLI::App app{
        "insert-correlate: joins insert-trace host records and insert-dp wire records into "
        "end-to-end views (docs/correlation.md; the records: docs/records.md)",
        "insert-correlate"};
    app.set_version_flag("--version", version_with_schema("insert-correlate"),
                         "print the version (and the records' schema) and exit");
    app.footer(
        "Inputs are JSON Lines files or '-' (standard input), each holding dataplane records,\n"
        "host records or both, in any order and split in any way. Regular files are read to\n"
        "their end and joined at once; pipes, FIFOs and --listen connections are joined live,\n"
        "in windows of data time (docs/correlation.md section 7).\n\n"
        "Examples:\n"
        "  insert-correlate dp.jsonl trace.jsonl                      # terminal report\n"
        "  insert-correlate dp.jsonl trace-*.jsonl --records e2e.jsonl\n"
        "  insert-correlate dp.jsonl trace.jsonl --records - --quiet | grep '\"type\":\"e2e\"'\n"
        "  insert-correlate dp.jsonl trace.jsonl --clock-offset node7=-2500 --threads 1\n"
        "  insert-correlate --listen /run/insert/correlator.sock --records live.jsonl\n"
        "  insert-correlate dp.jsonl trace-*.jsonl --records c.jsonl --html report.html\n"
        "  insert-correlate --listen /run/insert/correlator.sock --http 127.0.0.1:9465\n"
        "      # Prometheus /metrics and the live report page on port 9465\n"
        "  insert-correlate --nats nats://bus1:4222 --partitions 0-3 --records p0-3.jsonl\n"
        "      # one instance of several over the bus's partitions (docs/scale-out.md)\n");
    std::vector<std::string> offsets;
    int threads = 0;
    app.add_option("inputs", out.inputs, "input files ('-' for standard input)");
    app.add_option("-o,--records", out.records,
                   "write e2e/app/pair/clock/alert/congestion/summary records here ('-' for "
                   "stdout; docs/records.md)");
    app.add_option("--threads", threads, "worker threads (default: every CPU)");
    app.add_option("--clock-offset", offsets,
                   "HOST=NS: host clock minus observer clock, instead of the estimate "
                   "(repeatable)");
    app.add_flag("--same-clock", out.clock.same_clock,
                 "hosts and observers share one clock (offset 0 where no --clock-offset)");
    app.add_flag("-q,--quiet", out.quiet, "no terminal report (and no progress lines)");
    app.add_flag("--progress", out.progress,
                 "a batch run's progress and phase times on stderr (default: when stderr is "
                 "a terminal and not --quiet)");
    app.add_option("--html", out.html,
                   "also write the records as a self-contained HTML report (charts and tables; "
                   "written at the end of a successful run)");
    app.add_option("--listen", out.listen,
                   "accept producers (insert-trace --unix, insert-dp --records unix:PATH) on "
                   "this Unix socket, mode 0660; runs live until SIGINT/SIGTERM or --duration "
                   "(SIGHUP reopens --records)");
    app.add_option("--listen-group", out.listen_group,
                   "the --listen socket's group (mode 0660: its members may connect; default: "
                   "the process's group)");
    std::string partitions;
    std::string bus_given;  // the first --nats-* option or --partitions given (they need --nats)
    const auto note = [&bus_given](const char* name) {
        return [&bus_given, name](const std::string&) {
            if (bus_given.empty()) bus_given = name;
        };
    };
    app.add_option("--nats", out.bus.url,
                   "live: read the records from NATS JetStream instead (docs/scale-out.md): "
                   "nats://HOST:PORT, several comma-separated for a cluster; waits for the bus");
    app.add_option("--nats-subject", out.bus.subject,
                   "with --nats: the stream and subject prefix (default insert)")
        ->each(note("--nats-subject"));
    app.add_option("--nats-partitions", out.bus.partitions,
                   "with --nats: the deployment's partition count (default 8; the producers' "
                   "--nats-partitions)")
        ->each(note("--nats-partitions"));
    app.add_option("--partitions", partitions,
                   "with --nats: the partitions this instance may own, e.g. 0-3 or 0,2,5 "
                   "(default: all); it owns its share of them through leases "
                   "(docs/scale-out.md), taking over those of instances that stop")
        ->each(note("--partitions"));
    app.add_option("--instance", out.bus.instance,
                   "with --nats: this instance's name on the bus, unique in the deployment "
                   "(letters, digits, '.', '_', '-'; default insert-correlate.HOST.PID.START)")
        ->each(note("--instance"));
    app.add_option("--nats-replicas", out.bus.replicas,
                   "with --nats: replicas of the output stream PREFIX-out when this instance "
                   "creates it, 1-5 (default: as many as the input stream PREFIX has)")
        ->check(CLI::Range(1u, 5u))
        ->each(note("--nats-replicas"));
    app.add_option("--on-stop", out.bus.on_stop,
                   "with --nats: what a stopping instance does with what it holds undecided: "
                   "hand-over (the next owners decide it), decide (now, as at the end of the "
                   "input), auto (default: hand over while other instances are alive)")
        ->check(CLI::IsMember({"auto", "decide", "hand-over"}))
        ->each(note("--on-stop"));
    app.add_option("--lease-ttl", out.bus.lease_ttl_s,
                   "with --nats: seconds after which a dead instance's partitions are taken "
                   "over (its leases lapse; default 5, at least 2)")
        ->each(note("--lease-ttl"));
    app.add_option("--nats-hosts", out.bus.hosts,
                   "with --nats: the deployment's hosts file (multi-homed hosts; the producers' "
                   "--nats-hosts)")
        ->each(note("--nats-hosts"));
    app.add_option("--max-line", out.max_line,
                   "live: a line longer than this many bytes closes its connection or stream, "
                   "counted in summary.bad.too_long (default 1048576)");
    app.add_option("--http", out.http,
                   "serve Prometheus /metrics and the live report page (/) on ADDR:PORT "
                   "(127.0.0.1:9465, [::1]:9465, :9465 for every address); a batch run serves "
                   "until it ends");
    app.add_option("--max-delay", out.max_delay_s,
                   "live: seconds a record may arrive behind its stream (default 1)");
    app.add_option("--ttl", out.ttl_s,
                   "live: seconds of data after which undecided items are decided (default 30)");
    app.add_option("--interval", out.interval_s,
                   "live: seconds between windows and app records (default 1)");
    app.add_option("--duration", out.duration_s, "live: stop after this many seconds");
    double alert_gap_s = 1.0, scan_window_s = 1.0;
    app.add_option("--alertmanager", out.alertmanager.url,
                   "also deliver alerts and congestion episodes to this Prometheus Alertmanager "
                   "(http[s]://HOST[:PORT][/PREFIX])");
    app.add_option("--alertmanager-ca", out.alertmanager.ca_file,
                   "https: trust the CAs in this PEM file instead of the system's");
    app.add_option("--alertmanager-queue", out.alertmanager.queue_limit,
                   "alerts waiting for delivery at most; more are dropped and counted "
                   "(default 10000)");
    app.add_option("--alertmanager-resend", out.alertmanager.resend_s,
                   "seconds between re-sends of a firing alert (default 60)");
    app.add_option("--alertmanager-wait", out.alertmanager.wait_s,
                   "seconds the end of a run keeps trying to deliver (default 5)");
    app.add_option("--alert-gap", alert_gap_s,
                   "offences of one kind, victim and source closer than this (s) are one alert "
                   "(default 1)");
    app.add_option("--scan-window", scan_window_s, "rkey_scan: window in seconds (default 1)");
    double bin_ms = 10;
    app.add_option("--congestion-bin", bin_ms, "congestion: time bin in milliseconds (default 10)");
    app.add_option("--scan-threshold", out.security.scan_threshold,
                   "rkey_scan: offences of one source within the window (default 8)");
    bool list_rules = false;
    app.add_flag("--list-rules", list_rules,
                 "print the security rules (name, severity, what each means) and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 0;
    } catch (const CLI::ParseError& e) {
        error = e.what();
        return 2;
    }
    if (list_rules) {
        std::fputs(rules_markdown().c_str(), stdout);
        return 0;
    }
    if (threads < 0 || threads > 1024) {
        error = "--threads " + std::to_string(threads) + ": from 1 to 1024 (0: every CPU)";
        return 2;
    }
    if (!check_bus(out.bus, partitions, bus_given, out, error)) return 2;
    if (out.inputs.empty() && out.listen.empty() && !out.bus.enabled()) {
        error = "no input: give files, '-', --listen PATH or --nats URL";
        return 2;
    }
    if (app.count("--listen-group") && !resolve_group(out, error)) return 2;
    if (out.max_line < 64 || out.max_line > (uint64_t{1} << 30)) {
        error = "--max-line " + std::to_string(out.max_line) + ": from 64 to 1073741824";
        return 2;
    }
    const auto in_range = [&](const char* name, double v, double lo, double hi) {
        if (v >= lo && v <= hi) return true;  // false for NaN too
        error = std::string(name) + " " + std::to_string(v) + ": from " + std::to_string(lo) +
                " to " + std::to_string(hi);
        return false;
    };
    if (!in_range("--max-delay", out.max_delay_s, 0, 3600) ||
        !in_range("--ttl", out.ttl_s, 0.001, 86400) ||
        !in_range("--interval", out.interval_s, 0.01, 86400) ||
        !in_range("--duration", out.duration_s, 0, 1e9) ||
        !in_range("--alert-gap", alert_gap_s, 1e-6, 86400) ||
        !in_range("--scan-window", scan_window_s, 1e-6, 86400) ||
        !in_range("--congestion-bin", bin_ms, 0.001, 60000))
        return 2;
    out.congestion.bin_ns = static_cast<int64_t>(bin_ms * 1e6);
    out.security.alert_gap_ns = static_cast<int64_t>(alert_gap_s * 1e9);
    out.security.scan_window_ns = static_cast<int64_t>(scan_window_s * 1e9);
    if (out.security.scan_threshold < 1) {
        error = "--scan-threshold 0: at least 1";
        return 2;
    }
    if (!in_range("--alertmanager-resend", out.alertmanager.resend_s, 0.1, 86400) ||
        !in_range("--alertmanager-wait", out.alertmanager.wait_s, 0, 3600))
        return 2;
    for (const char* o : {"--alertmanager-ca", "--alertmanager-queue", "--alertmanager-resend",
                          "--alertmanager-wait"})
        if (app.count(o) && out.alertmanager.url.empty()) {
            error = std::string(o) + ": needs --alertmanager URL";
            return 2;
        }
    if (app.count("--alertmanager")) {
        std::string host, port, prefix;
        if (!parse_alertmanager_url(out.alertmanager.url, host, port, prefix, error)) return 2;
        if (!alert_delivery_available()) {
            error =
                "--alertmanager: this insert-correlate was built without libcurl "
                "(install libcurl4-openssl-dev - scripts/setup.sh - and rebuild)";
            return 2;
        }
    }
    if (out.alertmanager.queue_limit < 1 || out.alertmanager.queue_limit > 10'000'000) {
        error = "--alertmanager-queue " + std::to_string(out.alertmanager.queue_limit) +
                ": from 1 to 10000000";
        return 2;
    }
    if (app.count("--alertmanager-ca") && ::access(out.alertmanager.ca_file.c_str(), R_OK) != 0) {
        error = "--alertmanager-ca " + out.alertmanager.ca_file + ": " + std::strerror(errno);
        return 2;
    }
    out.threads = threads ? static_cast<unsigned>(threads)
                          : std::max(1u, std::thread::hardware_concurrency());
    for (const std::string& o : offsets)
        if (!parse_offset(o, out.clock, error)) return 2;
    if (app.count("--records") && out.records.empty()) {
        error = "--records: empty path (use '-' for standard output)";
        return 2;
    }
    if (app.count("--http") && !check_http(out.http, error)) return 2;
    if (app.count("--html") && out.html.empty()) {
        error = "--html: empty path";
        return 2;
    }
    if (!out.html.empty() && out.html == out.records) {
        error = "--html " + out.html + ": is the --records output too";
        return 2;
    }
    unsigned stdin_inputs = 0;
    for (const std::string& in : out.inputs) {
        if (in.empty()) {
            error = "input: empty path";
            return 2;
        }
        stdin_inputs += in == "-";
        struct stat st {};
        if (in != "-" && ::stat(in.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            error = in + ": a directory (give the record files in it, e.g. " + in + "/*.jsonl)";
            return 2;
        }
    }
    if (stdin_inputs > 1) {
        error = "input '-' given more than once";
        return 2;
    }
    return -1;
}

}  // namespace insert::correlate
