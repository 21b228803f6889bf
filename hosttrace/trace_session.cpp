#include "hosttrace/trace_session.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <set>

#include "dataplane/common/json_line.hpp"
#include "dataplane/common/version.hpp"
#include "hosttrace/cgroup_paths.hpp"
#include "hosttrace/elf_symbols.hpp"
#include "hosttrace/event_decoder.hpp"
#include "hosttrace/json_text.hpp"
#include "hosttrace/output_sink.hpp"
#include "hosttrace/proc_maps.hpp"
#include "hosttrace/process_table.hpp"
#include "hosttrace/tracer.hpp"

namespace insert::hosttrace {

namespace {

using Clock = std::chrono::steady_clock;

// Poll timeout: bounds how late a stop request or the housekeeping tick is noticed, and
// how long data-path records wait in the ring (they do not wake the reader).
constexpr int kPollTimeoutMs = 20;
// Housekeeping (drop counters, exited processes) interval.
constexpr auto kHousekeeping = std::chrono::milliseconds(250);
// The longest one read of the ring takes before the loop looks at the stop flag, the clock
// and the output again: a reader behind producers that never pause would otherwise read on
// forever (libbpf reads until the ring is empty).
constexpr auto kReadSlice = std::chrono::milliseconds(100);
// At a stop, what the ring holds is read for at most this long: a stop within 2 s of
// SIGINT is the promise (docs/insert-trace.md, "Stopping"; scripts/demo.sh checks it), and
// --unix may then wait 0.5 s for a slow collector and removing the probes take another
// 0.1-0.5 s. A full 4 MiB ring (65000 records) took 70 ms here; five tracers may share two
// cores. What producers still running add meanwhile is read as long as the deadline allows.
constexpr auto kStopDrain = std::chrono::milliseconds(750);
constexpr const char* kLibibverbsPrefix = "libibverbs.so";
// Records wait in the session's string until the poll's events are decoded, or until this
// much is there: one write per batch, and a bounded string when a poll brings many.
constexpr std::size_t kBatchBytes = 64 << 10;

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
        : opt_(o), out_(out), wall_offset_(wall_clock_offset_ns()) {
        batch_.reserve(kBatchBytes + kRecordBytes);
    }
    // Records of a run that ended on an error still reach the output.
    ~Session() { write_batch(); }

    int run(const std::vector<std::string>& libraries, const std::atomic<bool>& stop);

  private:
    void on_event(const insert_trace_event& e);
    void resolve_context_ops(pid_t pid, uint64_t ctx);
    // `read_until`: the ring is read for the processes found dead until then at most.
    void housekeeping(bool final, Clock::time_point read_until);
    void stop_tracing();
    void scan_processes();
    bool attach_library(const std::string& path, pid_t attach_pid, pid_t seen_in);
    // Ends a record written into batch_ (its `host` field, the newline); the batch goes to
    // the output when it is full.
    void end_record(JsonLine& j);
    void write_batch();
    // The batch to the output, and the output flushed. False once the output failed.
    bool flush();

    // A record is well under this (a verb record ~400 bytes): the batch's spare room.
    static constexpr std::size_t kRecordBytes = 4096;

    const TraceOptions& opt_;
    OutputSink& out_;
    int64_t wall_offset_;
    // Whole records not yet written: one string for the session, emptied at each write.
    std::string batch_;
    std::unique_ptr<VerbsTracer> tracer_;
    ProcessTable table_;
    CgroupPaths cgroups_;
    Counters reported_;
    uint64_t events_ = 0;
    uint64_t events_at_tick_ = 0;  // events_ at the last housekeeping
    bool output_failed_ = false;
    std::string last_error_;
    std::set<std::string> rejected_;
};

void Session::end_record(JsonLine& j) {
    text(j, "host", opt_.host);
    j.end();
    if (batch_.size() >= kBatchBytes) write_batch();
}

void Session::write_batch() {
    if (!out_.write(batch_)) output_failed_ = true;
    batch_.clear();
}

bool Session::flush() {
    write_batch();
    if (!out_.flush()) output_failed_ = true;
    return !output_failed_;
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
        JsonLine j(batch_);
        j.word("type", "attach");
        j.word("what", "control");
        j.u("t_ns", monotonic_ns());
        text(j, "lib", path);
        j.i("pid", attach_pid);
        if (seen_in)
            j.i("seen_in_pid", seen_in);
        else
            j.null("seen_in_pid");
        // Symbol names come from the tracer's own tables (kControlVerbs, trace_sites.h).
        j.object("symbols");
        for (const auto& [name, offset] : attached) j.u(name, offset);
        j.end_object();
        j.object("sites");
        for (const auto& [name, offset] : sites) j.u(name, offset);
        j.end_object();
        end_record(j);
    }
    return true;
}

void Session::on_event(const insert_trace_event& e) {
    events_++;
    if (cgroups_.first_sight(e.cgroup_id)) {
        // The tenant's name, once per cgroup, before its first verb record.
        JsonLine j(batch_);
        j.word("type", "cgroup");
        j.u("t_ns", e.ts_ns);
        j.i("wall_ns", static_cast<int64_t>(e.ts_ns) + wall_offset_);
        j.u("id", e.cgroup_id);
        if (const auto path = cgroups_.path_of(e.cgroup_id, monotonic_ns()))
            text(j, "path", *path);
        else
            j.null("path");
        end_record(j);
    }
    decode_event(e, table_, wall_offset_, opt_.host, batch_);
    if (batch_.size() >= kBatchBytes) write_batch();
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

    // Each function's outcome: written once all are known, and only when there is news.
    struct Outcome {
        const char* name;
        bool probed;
        std::string error;  // not probed: why
        std::string file;   // probed: where
        uint64_t offset;
        bool fresh;
        bool by_site;
    };
    std::vector<Outcome> outcomes;
    bool report = false;
    const auto failed = [&](const char* name, std::string why) {
        outcomes.push_back({name, false, std::move(why), {}, 0, false, false});
        report = true;
    };
    std::string error;
    auto maps = read_maps(pid, error);
    for (const Slot& f : slots) {
        uint64_t addr = 0;
        if (!maps || !read_process_memory(pid, f.addr_of_pointer, &addr, sizeof(addr))) {
            failed(f.name, "process exited or memory unreadable");
            continue;
        }
        if (!addr && f.fn == DatapathFn::CreateQpEx)
            continue;  // the provider has no create_qp_ex: ibv_create_qp_ex fails without a call
        auto loc = locate(*maps, addr);
        if (!loc) {
            failed(f.name, fmt::format("0x{:x} is not in a mapped file", addr));
            continue;
        }
        const std::string path = path_in_process_root(pid, loc->path);
        bool already = false, by_site = false;
        const pid_t attach_pid = opt_.pid ? opt_.pid : -1;
        if (!tracer_->attach_datapath(f.fn, path, loc->offset, attach_pid, already, by_site,
                                      error)) {
            failed(f.name, error);
            std::fprintf(stderr, "insert-trace: %s\n", error.c_str());
            continue;
        }
        report |= !already;
        outcomes.push_back({f.name, true, {}, loc->path, loc->offset, !already, by_site});
    }
    if (!report) return;
    JsonLine j(batch_);
    j.word("type", "attach");
    j.word("what", "ops");
    j.u("t_ns", monotonic_ns());
    j.i("pid", pid);
    j.ip("ctx", HexPointer{ctx});
    j.object("functions");
    for (const Outcome& o : outcomes) {
        j.object(o.name);
        if (!o.probed) {
            text(j, "error", o.error);
        } else {
            text(j, "file", o.file);
            j.u("offset", o.offset);
            j.b("new", o.fresh);
            j.word("probe", o.by_site ? "site" : "entry");
        }
        j.end_object();
    }
    j.end_object();
    end_record(j);
}

void Session::housekeeping(bool final, Clock::time_point read_until) {
    // Processes found dead, then the ring read: whatever they submitted before dying (the
    // last trace records softverbs flushed at exit) is decoded before their process_exit.
    const std::vector<pid_t> dead = table_.exited();
    if (!dead.empty()) tracer_->drain(read_until);
    const Counters c = tracer_->counters();
    const uint64_t now = monotonic_ns();
    // wall_ns as on verb records: the correlator places these on the host's clock.
    const int64_t wall_now = static_cast<int64_t>(now) + wall_offset_;
    if (c.ringbuf_drops != reported_.ringbuf_drops) {
        JsonLine j(batch_);
        j.word("type", "lost");
        j.u("t_ns", now);
        j.i("wall_ns", wall_now);
        j.u("ringbuf_drops", c.ringbuf_drops - reported_.ringbuf_drops);
        j.u("ringbuf_drops_total", c.ringbuf_drops);
        end_record(j);
    }
    reported_ = c;
    for (const ExitedProcess& p : table_.reap(dead)) {
        JsonLine j(batch_);
        j.word("type", "process_exit");
        j.u("t_ns", now);
        j.i("wall_ns", wall_now);
        j.i("pid", p.pid);
        text(j, "comm", p.comm);
        j.u("open_qps", p.open_qps);
        j.u("open_mrs", p.open_mrs);
        end_record(j);
    }
    // The host's clock, so that a live correlator's time moves on (docs/correlation.md 7):
    // when nothing was traced since the last housekeeping - and always with --nats, where
    // the verbs go to the host's own partition only and the tick to every partition: each
    // partition's join waits for this tracer's stream on it (docs/scale-out.md).
    if (!final && dead.empty() && (events_ == events_at_tick_ || opt_.nats.enabled())) {
        JsonLine j(batch_);
        j.word("type", "tick");
        j.u("t_ns", now);
        j.i("wall_ns", wall_now);
        end_record(j);
    }
    events_at_tick_ = events_;
    if (final) {
        JsonLine j(batch_);
        j.word("type", "trace_stats");
        j.b("final", true);
        j.u("t_ns", monotonic_ns());
        j.u("events", events_);
        j.u("ringbuf_drops", c.ringbuf_drops);
        j.u("read_errors", c.read_errors);
        j.u("sampled_out", c.sampled_out);
        j.u("probes", tracer_->links());
        if (const UnixLineSender* u = out_.socket())  // --unix: what the collector missed
            j.object("unix")
                .u("connects", u->counts().connects)
                .u("dropped", u->counts().dropped)
                .end_object();
        end_record(j);
    }
    flush();
}

// Processes started after the tracer are covered when they map a probed file (uprobes
// follow the inode); this finds the ones that map another libibverbs copy. With --netns,
// only in that namespace: a copy only other namespaces use would be probed for nothing
// (every call there trapped and filtered out), and each probe lengthens the stop.
void Session::scan_processes() {
    const pid_t self = getpid();
    for (pid_t pid : list_pids()) {
        if (pid == self) continue;
        if (opt_.netns_inode) {
            struct stat ns {};
            if (stat(fmt::format("/proc/{}/ns/net", pid).c_str(), &ns) != 0 ||
                ns.st_ino != opt_.netns_inode)
                continue;
        }
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
    {
        JsonLine j(batch_);
        j.word("type", "trace_start");
        j.word("schema", kRecordSchema);  // docs/records.md
        j.u("t_ns", monotonic_ns());
        j.i("wall_offset_ns", wall_offset_);
        text(j, "datapath", datapath_text(opt_.datapath_sample));
        j.word("sites", opt_.use_sites ? "auto" : "off");
        j.u("ringbuf_bytes", opt_.ringbuf_bytes);
        if (opt_.pid)
            j.i("pid", opt_.pid);
        else
            j.null("pid");
        if (opt_.comm.empty())
            j.null("comm");
        else
            text(j, "comm", opt_.comm);
        if (opt_.cgroup_id)
            j.u("cgroup", opt_.cgroup_id);
        else
            j.null("cgroup");
        if (opt_.netns.empty())
            j.null("netns");
        else
            text(j, "netns", opt_.netns);
        j.u("probes", tracer_->links());
        end_record(j);
    }
    if (!flush()) return fail("writing the output failed");

    const auto started = Clock::now();
    auto next_housekeeping = started + kHousekeeping;
    auto next_scan = started + std::chrono::milliseconds(opt_.scan_ms);
    while (!stop.load(std::memory_order_relaxed) && !output_failed_) {
        const int n = tracer_->poll(kPollTimeoutMs, Clock::now() + kReadSlice);
        if (n < 0 && n != -EINTR)
            return fail(std::string("reading the ring buffer: ") + std::strerror(-n));
        const auto now = Clock::now();
        if (now >= next_housekeeping) {
            housekeeping(false, now + kReadSlice);
            next_housekeeping = now + kHousekeeping;
        } else if (n > 0) {
            flush();
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
    stop_tracing();
    if (output_failed_) return fail("writing the output failed (reader gone or disk full)");
    return 0;
}

// What the ring holds (for kStopDrain at most), the final records, then the probes removed
// - the part of a stop that takes time, timed on one line.
void Session::stop_tracing() {
    const auto started = Clock::now();
    const auto read_until = started + kStopDrain;
    bool cut = false;
    tracer_->drain(read_until, cut);
    housekeeping(true, read_until);
    const auto written = Clock::now();
    const size_t probes = tracer_->links();
    tracer_->detach();
    const auto ms = [](Clock::duration d) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    };
    std::fprintf(
        stderr,
        "insert-trace: stopped: ring read and final records written in %lld ms%s, "
        "%zu probes (%s) removed in %lld ms\n",
        static_cast<long long>(ms(written - started)),
        cut ? " (cut at the deadline: records left in the ring are not in the output)" : "", probes,
        tracer_->link_kind(), static_cast<long long>(ms(Clock::now() - written)));
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
    auto out = OutputSink::open(options, error);
    if (!out) return fail(error);
    Session session(options, *out);
    return session.run(libraries, stop);
}

}  // namespace insert::hosttrace
