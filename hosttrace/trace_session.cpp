#include "hosttrace/trace_session.hpp"

#include <unistd.h>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "hosttrace/elf_symbols.hpp"
#include "hosttrace/event_decoder.hpp"
#include "hosttrace/output_sink.hpp"
#include "hosttrace/proc_maps.hpp"
#include "hosttrace/process_table.hpp"
#include "hosttrace/tracer.hpp"

namespace insert::hosttrace {

namespace {

// Insertion-ordered objects: "type" and "verb" lead every line, as a reader expects.
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Poll timeout: bounds how late a stop request or the housekeeping tick is noticed, and
// how long data-path records wait in the ring (they do not wake the reader).
constexpr int kPollTimeoutMs = 20;
// Housekeeping (drop counters, exited processes) interval.
constexpr auto kHousekeeping = std::chrono::milliseconds(250);
constexpr const char* kLibibverbsPrefix = "libibverbs.so";

// libbpf's print callback takes no user pointer, so its verbosity is file-static; it is
// set once before libbpf is first used.
bool g_verbose = false;

int libbpf_log(enum libbpf_print_level level, const char* format, va_list args) {
    if (level == LIBBPF_DEBUG || (!g_verbose && level != LIBBPF_WARN)) return 0;
    std::fputs("insert-trace: libbpf: ", stderr);
    return std::vfprintf(stderr, format, args);
}

uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-trace: %s\n", message.c_str());
    return 2;
}

class Session {
  public:
    Session(const TraceOptions& o, OutputSink& out)
        : opt_(o),
          out_(out),
          wall_offset_(wall_clock_offset_ns()),
          host_field_(",\"host\":" + json(o.host).dump() + "}") {}

    int run(const std::vector<std::string>& libraries, const std::atomic<bool>& stop);

  private:
    void on_event(const insert_trace_event& e);
    void resolve_context_ops(pid_t pid, uint64_t ctx);
    void housekeeping(bool final);
    void scan_processes();
    bool attach_library(const std::string& path, pid_t attach_pid, pid_t seen_in);
    void emit(const json& j);

    const TraceOptions& opt_;
    OutputSink& out_;
    int64_t wall_offset_;
    // `,"host":"NAME"}`: spliced over the closing brace of every record (cheaper than a
    // field added to each json object).
    std::string host_field_;
    std::unique_ptr<VerbsTracer> tracer_;
    ProcessTable table_;
    Counters reported_;
    uint64_t events_ = 0;
    bool output_failed_ = false;
    std::string last_error_;
    std::set<std::string> rejected_;
};

void Session::emit(const json& j) {
    std::string line = j.dump();
    line.replace(line.size() - 1, 1, host_field_);
    if (!out_.write_line(line)) output_failed_ = true;
}

bool Session::attach_library(const std::string& path, pid_t attach_pid, pid_t seen_in) {
    std::vector<std::pair<std::string, uint64_t>> attached, sites;
    bool already = false;
    std::string error;
    if (!tracer_->attach_library(path, attach_pid, attached, sites, already, error)) {
        last_error_ = error;
        return false;
    }
    if (!already) {
        json symbols = json::object();
        for (const auto& [name, offset] : attached) symbols[name] = offset;
        json site_offsets = json::object();
        for (const auto& [name, offset] : sites) site_offsets[name] = offset;
        emit({{"type", "attach"},
              {"what", "control"},
              {"t_ns", monotonic_ns()},
              {"lib", path},
              {"pid", attach_pid},
              {"seen_in_pid", seen_in ? json(seen_in) : json(nullptr)},
              {"symbols", symbols},
              {"sites", site_offsets}});
    }
    return true;
}

void Session::on_event(const insert_trace_event& e) {
    events_++;
    emit(decode_event(e, table_, wall_offset_));
    if (table_.claim_context_for_ops(static_cast<pid_t>(e.pid), e.ctx))
        resolve_context_ops(static_cast<pid_t>(e.pid), e.ctx);
}

// The data-path verbs (and ibv_create_qp_ex) are inline wrappers that call through the
// context's ops tables: read those pointers from the process, find the file each lives in,
// and probe that file. Providers' functions are static and stripped: this is the only way
// to find them.
void Session::resolve_context_ops(pid_t pid, uint64_t ctx) {
    struct Slot {
        DatapathFn fn;
        const char* name;
        uint64_t addr_of_pointer;
    };
    std::vector<Slot> slots;
    if (opt_.datapath_sample != 0) {
        slots.push_back(
            {DatapathFn::PostSend, "post_send", ctx + IBV_CONTEXT_OPS + IBV_OPS_POST_SEND});
        slots.push_back(
            {DatapathFn::PostRecv, "post_recv", ctx + IBV_CONTEXT_OPS + IBV_OPS_POST_RECV});
        slots.push_back({DatapathFn::PollCq, "poll_cq", ctx + IBV_CONTEXT_OPS + IBV_OPS_POLL_CQ});
    }
    // verbs_get_ctx_op(): an extended context whose size covers the field.
    uint64_t abi_compat = 0, vctx_size = 0;
    if (read_process_memory(pid, ctx + IBV_CONTEXT_ABI_COMPAT, &abi_compat, sizeof(abi_compat)) &&
        abi_compat == ~0ull &&
        read_process_memory(pid, ctx + VERBS_CONTEXT_SZ_FROM_CONTEXT, &vctx_size,
                            sizeof(vctx_size)) &&
        vctx_size >= VERBS_CONTEXT_CREATE_QP_EX_MIN_SZ)
        slots.push_back({DatapathFn::CreateQpEx, "create_qp_ex",
                         ctx + VERBS_CONTEXT_CREATE_QP_EX_FROM_CONTEXT});
    if (slots.empty()) return;

    std::string error;
    auto maps = read_maps(pid, error);
    json functions = json::object();
    bool report = false;
    for (const Slot& f : slots) {
        uint64_t addr = 0;
        if (!maps || !read_process_memory(pid, f.addr_of_pointer, &addr, sizeof(addr))) {
            functions[f.name] = {{"error", "process exited or memory unreadable"}};
            report = true;
            continue;
        }
        if (!addr && f.fn == DatapathFn::CreateQpEx)
            continue;  // the provider has no create_qp_ex: ibv_create_qp_ex fails without a call
        auto loc = locate(*maps, addr);
        if (!loc) {
            functions[f.name] = {{"error", fmt::format("0x{:x} is not in a mapped file", addr)}};
            report = true;
            continue;
        }
        const std::string path = path_in_process_root(pid, loc->path);
        bool already = false, by_site = false;
        const pid_t attach_pid = opt_.pid ? opt_.pid : -1;
        if (!tracer_->attach_datapath(f.fn, path, loc->offset, attach_pid, already, by_site,
                                      error)) {
            functions[f.name] = {{"error", error}};
            std::fprintf(stderr, "insert-trace: %s\n", error.c_str());
            report = true;
            continue;
        }
        report |= !already;
        functions[f.name] = {{"file", loc->path},
                             {"offset", loc->offset},
                             {"new", !already},
                             {"probe", by_site ? "site" : "entry"}};
    }
    if (report)
        emit({{"type", "attach"},
              {"what", "ops"},
              {"t_ns", monotonic_ns()},
              {"pid", pid},
              {"ctx", hex_pointer(ctx)},
              {"functions", functions}});
}

void Session::housekeeping(bool final) {
    // Processes found dead, then the ring read: whatever they submitted before dying (the
    // last trace records softverbs flushed at exit) is decoded before their process_exit.
    const std::vector<pid_t> dead = table_.exited();
    if (!dead.empty()) tracer_->drain();
    const Counters c = tracer_->counters();
    const uint64_t now = monotonic_ns();
    // wall_ns as on verb records: the correlator places these on the host's clock.
    const int64_t wall_now = static_cast<int64_t>(now) + wall_offset_;
    if (c.ringbuf_drops != reported_.ringbuf_drops)
        emit({{"type", "lost"},
              {"t_ns", now},
              {"wall_ns", wall_now},
              {"ringbuf_drops", c.ringbuf_drops - reported_.ringbuf_drops},
              {"ringbuf_drops_total", c.ringbuf_drops}});
    reported_ = c;
    for (const ExitedProcess& p : table_.reap(dead))
        emit({{"type", "process_exit"},
              {"t_ns", now},
              {"wall_ns", wall_now},
              {"pid", p.pid},
              {"comm", p.comm},
              {"open_qps", p.open_qps},
              {"open_mrs", p.open_mrs}});
    if (final)
        emit({{"type", "trace_stats"},
              {"final", true},
              {"t_ns", monotonic_ns()},
              {"events", events_},
              {"ringbuf_drops", c.ringbuf_drops},
              {"read_errors", c.read_errors},
              {"sampled_out", c.sampled_out},
              {"probes", tracer_->links()}});
    if (!out_.flush()) output_failed_ = true;
}

// Processes started after the tracer are covered when they map a probed file (uprobes
// follow the inode); this finds the ones that map another libibverbs copy.
void Session::scan_processes() {
    const pid_t self = getpid();
    for (pid_t pid : list_pids()) {
        if (pid == self) continue;
        std::string error;
        auto maps = read_maps(pid, error);
        if (!maps) continue;
        auto lib = find_mapped_library(*maps, kLibibverbsPrefix);
        // A copy that is not a complete libibverbs is reported once, not every scan.
        if (lib && !attach_library(path_in_process_root(pid, *lib), -1, pid) &&
            rejected_.insert(*lib).second)
            std::fprintf(stderr, "insert-trace: %s\n", last_error_.c_str());
    }
}

int Session::run(const std::vector<std::string>& libraries, const std::atomic<bool>& stop) {
    TracerFilters filters;
    filters.tgid = opt_.pid;
    filters.cgroup_id = opt_.cgroup_id;
    filters.netns_inode = static_cast<uint32_t>(opt_.netns_inode);
    filters.comm = opt_.comm;
    filters.datapath_sample = opt_.datapath_sample;
    filters.ringbuf_bytes = opt_.ringbuf_bytes;
    filters.use_sites = opt_.use_sites;
    std::string error;
    tracer_ = VerbsTracer::open(
        filters, [this](const insert_trace_event& e) { on_event(e); }, error);
    if (!tracer_) return fail(error);
    const pid_t attach_pid = opt_.pid ? opt_.pid : -1;
    for (const std::string& lib : libraries)
        if (!attach_library(lib, attach_pid, 0)) return fail(last_error_);
    const bool scanning = opt_.pid == 0 && opt_.scan_ms > 0;
    if (scanning) scan_processes();
    emit({{"type", "trace_start"},
          {"t_ns", monotonic_ns()},
          {"wall_offset_ns", wall_offset_},
          {"datapath", datapath_text(opt_.datapath_sample)},
          {"sites", opt_.use_sites ? "auto" : "off"},
          {"ringbuf_bytes", opt_.ringbuf_bytes},
          {"pid", opt_.pid ? json(opt_.pid) : json(nullptr)},
          {"comm", opt_.comm.empty() ? json(nullptr) : json(opt_.comm)},
          {"cgroup", opt_.cgroup_id ? json(opt_.cgroup_id) : json(nullptr)},
          {"netns", opt_.netns.empty() ? json(nullptr) : json(opt_.netns)},
          {"probes", tracer_->links()}});
    if (!out_.flush()) return fail("writing the output failed");

    const auto started = Clock::now();
    auto next_housekeeping = started + kHousekeeping;
    auto next_scan = started + std::chrono::milliseconds(opt_.scan_ms);
    while (!stop.load(std::memory_order_relaxed) && !output_failed_) {
        const int n = tracer_->poll(kPollTimeoutMs);
        if (n < 0 && n != -EINTR)
            return fail(std::string("reading the ring buffer: ") + std::strerror(-n));
        const auto now = Clock::now();
        if (now >= next_housekeeping) {
            housekeeping(false);
            next_housekeeping = now + kHousekeeping;
        } else if (n > 0 && !out_.flush()) {
            output_failed_ = true;
        }
        if (scanning && now >= next_scan) {
            scan_processes();
            next_scan = now + std::chrono::milliseconds(opt_.scan_ms);
        }
        if (opt_.duration_s > 0 && now - started >= std::chrono::duration<double>(opt_.duration_s))
            break;
        // With --pid, the run ends with the process.
        if (opt_.pid && !process_alive(opt_.pid)) break;
    }
    tracer_->drain();
    housekeeping(true);
    if (output_failed_) return fail("writing the output failed (reader gone or disk full)");
    return 0;
}

}  // namespace

int run_trace_session(const TraceOptions& options, const std::atomic<bool>& stop) {
    g_verbose = options.verbose;
    libbpf_set_print(libbpf_log);
    if (geteuid() != 0)
        return fail("needs root (CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE) to attach uprobes");

    // Check every target before loading anything, so a typo costs no probes.
    std::vector<std::string> libraries;
    if (options.pid) {
        std::string error;
        auto maps = read_maps(options.pid, error);
        if (!maps) return fail(error);
        auto lib = find_mapped_library(*maps, kLibibverbsPrefix);
        if (!lib)
            return fail(fmt::format("pid {}: maps no {}* (not a verbs application?)", options.pid,
                                    kLibibverbsPrefix));
        libraries.push_back(path_in_process_root(options.pid, *lib));
    } else if (!options.libraries.empty()) {
        libraries = options.libraries;
    } else {
        const std::string sys = system_libibverbs();
        if (sys.empty() && options.scan_ms == 0)
            return fail("no system libibverbs.so.1 found; give --lib PATH");
        if (!sys.empty()) libraries.push_back(sys);
    }
    for (const std::string& lib : libraries) {
        std::string error;
        auto elf = ElfSymbols::load(lib, error);
        if (!elf) return fail("--lib " + error);
        for (const VerbProbeSpec& v : kControlVerbs)
            if (v.required && !elf->function_offset(v.symbol))
                return fail("--lib " + lib + ": does not define " + v.symbol +
                            " (not a libibverbs?)");
    }

    std::string error;
    auto out = OutputSink::open(options.output, options.unix_socket, error);
    if (!out) return fail(error);
    Session session(options, *out);
    return session.run(libraries, stop);
}

}  // namespace insert::hosttrace
