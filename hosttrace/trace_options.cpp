#include "hosttrace/trace_options.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "dataplane/common/version.hpp"

namespace insert::hosttrace {

namespace {

constexpr uint32_t kMinRingbufKb = 4;         // one page
constexpr uint32_t kMaxRingbufKb = 1u << 20;  // 1 GiB

bool parse_datapath(const std::string& text, uint32_t& sample) {
    if (text == "off") {
        sample = 0;
        return true;
    }
    if (text == "all") {
        sample = 1;
        return true;
    }
    if (text.starts_with("sample:")) {
        const char* b = text.data() + 7;
        const char* e = text.data() + text.size();
        auto [p, ec] = std::from_chars(b, e, sample);
        return ec == std::errc() && p == e && sample >= 1;
    }
    return false;
}

// A cgroup v2 id is the inode number of the cgroup's directory.
bool parse_cgroup(const std::string& text, uint64_t& id, std::string& error) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec == std::errc() && p == text.data() + text.size() && id != 0) return true;
    struct stat st;
    if (stat(text.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        error = "--cgroup " + text + ": neither a cgroup id nor a cgroup directory";
        return false;
    }
    id = st.st_ino;
    return true;
}

}  // namespace

std::string datapath_text(uint32_t sample) {
    if (sample == 0) return "off";
    if (sample == 1) return "all";
    return "sample:" + std::to_string(sample);
}

int parse_trace_options(int argc, char** argv, TraceOptions& out, std::string& error) {
    CLI::App app{"insert-trace: eBPF tracing of RDMA verbs (libibverbs) on this host",
                 "insert-trace"};
    app.set_version_flag("--version", version_with_schema("insert-trace"),
                         "print the version (and the records' schema) and exit");
    app.footer(
        "Examples:\n"
        "  insert-trace                                  # every process using the system "
        "libibverbs\n"
        "  insert-trace -p 4242 -o verbs.jsonl           # one running process\n"
        "  insert-trace -l build/hosttrace/softverbs/libibverbs.so.1 --datapath sample:100\n"
        "  insert-trace --comm ib_write_bw --unix /run/insert/correlator.sock\n"
        "  insert-trace --netns h1 --host h1 -o h1.jsonl       # one emulated host\n"
        "  insert-trace -o verbs.jsonl --nats nats://bus1:4222,nats://bus2:4222\n"
        "      # also to NATS JetStream, by host partition (docs/scale-out.md)\n");
    std::string datapath = "all";
    std::string cgroup;
    std::string sites = "auto";
    uint32_t ringbuf_kb = out.ringbuf_bytes / 1024;
    int pid = 0;
    app.add_option("-o,--output", out.output,
                   "JSON Lines destination file (docs/records.md), '-' for stdout");
    app.add_option("--unix", out.unix_socket,
                   "write to this Unix stream socket instead (insert-correlate --listen; "
                   "started before it or not, reconnected when it restarts)");
    CLI::Option* unix_buffer =
        app.add_option("--unix-buffer", out.unix_buffer,
                       "with --unix: bytes of records kept while the collector is away or "
                       "behind (default 16777216); more are dropped and counted in trace_stats")
            ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 30));
    CLI::Option* pid_option =
        app.add_option("-p,--pid", pid, "trace only this process (its mapped libibverbs)");
    app.add_option("--comm", out.comm, "trace only processes with this command name");
    app.add_option("--cgroup", cgroup, "trace only this cgroup v2 (directory or id)");
    app.add_option("-l,--lib", out.libraries,
                   "libibverbs.so copy to probe (repeatable); default: the system's");
    app.add_option("--datapath", datapath, "post_send/post_recv/poll_cq: off, all, sample:N");
    app.add_option("--sites", sites,
                   "auto: probe softverbs' trace sites where a library exports them; off: "
                   "always the provider's ops-table entries");
    app.add_option("--ringbuf-kb", ringbuf_kb, "ring buffer size in KiB (power of two)");
    app.add_option("--scan-ms", out.scan_ms,
                   "look for processes mapping other libibverbs copies every N ms (0: off)");
    app.add_option("--duration", out.duration_s, "stop after this many seconds");
    app.add_option("--netns", out.netns,
                   "trace only processes in this network namespace (a name under /run/netns, "
                   "or a path such as /proc/PID/ns/net)");
    app.add_option("--host", out.host,
                   "name of this host in every record (default: the hostname); the "
                   "correlator keys processes and clocks by it");
    app.add_flag("-v,--verbose", out.verbose, "libbpf diagnostics on stderr");
    add_nats_options(app, out.nats);
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
    if (unix_buffer->count() && out.unix_socket.empty()) {
        error = "--unix-buffer: needs --unix PATH";
        return 2;
    }
    if (!parse_datapath(datapath, out.datapath_sample)) {
        error = "--datapath " + datapath + ": expected off, all or sample:N (N >= 1)";
        return 2;
    }
    if (sites != "auto" && sites != "off") {
        error = "--sites " + sites + ": expected auto or off";
        return 2;
    }
    out.use_sites = sites == "auto";
    // 0 is "no filter" inside; given on the command line it would trace every process.
    if (pid < 0 || (pid == 0 && pid_option->count() > 0)) {
        error = "--pid " + std::to_string(pid) + ": not a process id";
        return 2;
    }
    out.pid = pid;
    if (out.comm.size() > 15) {
        error = "--comm " + out.comm + ": longer than the kernel's 15-character comm";
        return 2;
    }
    if (!cgroup.empty() && !parse_cgroup(cgroup, out.cgroup_id, error)) return 2;
    if (ringbuf_kb < kMinRingbufKb || ringbuf_kb > kMaxRingbufKb ||
        (ringbuf_kb & (ringbuf_kb - 1))) {
        error = "--ringbuf-kb " + std::to_string(ringbuf_kb) + ": power of two from 4 to 1048576";
        return 2;
    }
    out.ringbuf_bytes = ringbuf_kb * 1024;
    if (!std::isfinite(out.duration_s) || out.duration_s < 0) {  // NaN compares false
        error = "--duration: not a number of seconds >= 0";
        return 2;
    }
    if (!out.netns.empty()) {
        const std::string path =
            out.netns.find('/') == std::string::npos ? "/run/netns/" + out.netns : out.netns;
        struct stat st {};
        if (stat(path.c_str(), &st) != 0) {
            error = "--netns " + out.netns + ": " + path + " does not exist";
            return 2;
        }
        out.netns_inode = st.st_ino;
    }
    if (out.host.empty()) {
        char name[256] = {};
        if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
            error = "--host: the hostname is unknown here; give a name";
            return 2;
        }
        out.host = name;
    }
    if (!nats_config_from(out.nats, "insert-trace",
                          default_producer_identity("insert-trace", out.host), out.nats_config,
                          error))
        return 2;
    if (out.pid && !out.libraries.empty()) {
        error = "--pid and --lib: the library of a process is the one it maps; give one of them";
        return 2;
    }
    return -1;
}

}  // namespace insert::hosttrace
