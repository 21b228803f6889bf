#include "hosttrace/tracer.hpp"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <system_error>
#include <thread>

#include "hosttrace/elf_symbols.hpp"
#include "verbs_trace.skel.h"

namespace insert::hosttrace {

// ibv_create_qp_ex / ibv_reg_mr_iova are exported by some libibverbs builds only.
const std::vector<VerbProbeSpec> kControlVerbs = {
    {"ibv_open_device", true},  {"ibv_query_gid", true},     {"ibv_alloc_pd", true},
    {"ibv_create_cq", true},    {"ibv_create_qp", true},     {"ibv_create_qp_ex", false},
    {"ibv_modify_qp", true},    {"ibv_destroy_qp", true},    {"ibv_reg_mr", true},
    {"ibv_reg_mr_iova", false}, {"ibv_reg_mr_iova2", false}, {"ibv_dereg_mr", true},
};

namespace {

struct ProbePair {
    bpf_program* entry;
    bpf_program* ret;  // nullptr: entry only
};

ProbePair programs_for(verbs_trace_bpf* s, std::string_view symbol) {
    auto& p = s->progs;
    if (symbol == "ibv_open_device") return {p.open_device_entry, p.open_device_return};
    if (symbol == "ibv_query_gid") return {p.query_gid_entry, p.query_gid_return};
    if (symbol == "ibv_alloc_pd") return {p.alloc_pd_entry, p.alloc_pd_return};
    if (symbol == "ibv_create_cq") return {p.create_cq_entry, p.create_cq_return};
    if (symbol == "ibv_create_qp" || symbol == "ibv_create_qp_ex")
        return {p.create_qp_entry, p.create_qp_return};
    if (symbol == "ibv_modify_qp") return {p.modify_qp_entry, p.modify_qp_return};
    if (symbol == "ibv_destroy_qp") return {p.destroy_qp_entry, nullptr};
    if (symbol == "ibv_reg_mr") return {p.reg_mr_entry, p.reg_mr_return};
    if (symbol == "ibv_reg_mr_iova" || symbol == "ibv_reg_mr_iova2")
        return {p.reg_mr_iova_entry, p.reg_mr_return};
    if (symbol == "ibv_dereg_mr") return {p.dereg_mr_entry, nullptr};
    return {nullptr, nullptr};
}

// uprobe_multi links (kernel 6.6): a BPF link per probe, released without the perf events'
// kernel-wide event_mutex. Debian 12's linux/bpf.h (6.1) and libbpf 1.1 predate them, so
// the attach type, its flag and its part of union bpf_attr (BPF_LINK_CREATE) are spelled
// out here, as the kernel's uapi header defines them.
constexpr uint32_t kAttachUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI
constexpr uint32_t kUprobeMultiReturn = 1;   // BPF_F_UPROBE_MULTI_RETURN

struct UprobeMultiLinkAttr {
    uint32_t prog_fd;
    uint32_t target_fd;
    uint32_t attach_type;
    uint32_t flags;
    uint64_t path;  // pointers as u64
    uint64_t offsets;
    uint64_t ref_ctr_offsets;
    uint64_t cookies;
    uint32_t cnt;
    uint32_t multi_flags;
    uint32_t pid;  // 0: every process
    uint32_t zero;
};
static_assert(offsetof(UprobeMultiLinkAttr, path) == 16, "link_create's union starts at 16");
static_assert(offsetof(UprobeMultiLinkAttr, cnt) == 48 && offsetof(UprobeMultiLinkAttr, pid) == 56,
              "uprobe_multi: path offsets ref_ctr_offsets cookies, then cnt flags pid");

int create_uprobe_multi(int prog_fd, const char* path, const uint64_t* offset, bool retprobe,
                        int32_t pid) {
    UprobeMultiLinkAttr a{};
    a.prog_fd = static_cast<uint32_t>(prog_fd);
    a.attach_type = kAttachUprobeMulti;
    a.path = reinterpret_cast<uintptr_t>(path);
    a.offsets = reinterpret_cast<uintptr_t>(offset);
    a.cnt = 1;
    a.multi_flags = retprobe ? kUprobeMultiReturn : 0;
    a.pid = static_cast<uint32_t>(pid);
    return static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a)));
}

// Whether this kernel has uprobe_multi links with per-process filtering (-p): a program of
// that attach type loads, a link on "/" fails only because "/" is not a regular file, and
// a negative pid is refused before the path is looked at (the first kernels with these
// links filtered by thread, not process, and did not check the pid).
bool kernel_has_uprobe_multi() {
    const bpf_insn return_zero[] = {
        {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    LIBBPF_OPTS(bpf_prog_load_opts, load,
                .expected_attach_type = static_cast<bpf_attach_type>(kAttachUprobeMulti));
    const int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "probe_multi", "GPL", return_zero,
                                   sizeof(return_zero) / sizeof(return_zero[0]), &load);
    if (prog < 0) return false;
    const uint64_t offset = 0;
    int fd = create_uprobe_multi(prog, "/", &offset, false, 0);
    bool ok = fd < 0 && errno == EBADF;
    if (fd >= 0) close(fd);
    if (ok) {
        fd = create_uprobe_multi(prog, "/", &offset, false, -1);
        ok = fd < 0 && errno == EINVAL;
        if (fd >= 0) close(fd);
    }
    close(prog);
    return ok;
}

bool file_identity(const std::string& path, uint64_t& dev, uint64_t& ino) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return false;
    dev = st.st_dev;
    ino = st.st_ino;
    return true;
}

}  // namespace

std::string system_libibverbs() {
    for (const char* p :
         {"/usr/lib/x86_64-linux-gnu/libibverbs.so.1", "/usr/lib/aarch64-linux-gnu/libibverbs.so.1",
          "/usr/lib64/libibverbs.so.1", "/usr/lib/libibverbs.so.1"})
        if (access(p, R_OK) == 0) return p;
    return {};
}

std::unique_ptr<VerbsTracer> VerbsTracer::open(const TracerFilters& filters, EventHandler handler,
                                               std::string& error) {
    std::unique_ptr<VerbsTracer> t(new VerbsTracer());
    t->handler_ = std::move(handler);
    t->skel_ = verbs_trace_bpf__open();
    if (!t->skel_) {
        error = std::string("opening the BPF object: ") + std::strerror(errno);
        return nullptr;
    }
    auto* ro = t->skel_->rodata;
    ro->filter_tgid = static_cast<uint32_t>(filters.tgid);
    ro->filter_cgroup = filters.cgroup_id;
    ro->filter_netns = filters.netns_inode;
    ro->datapath_sample = filters.datapath_sample;
    // A quarter of the ring: the reader is woken early enough that a burst arriving while
    // it sleeps on its timer does not fill the ring.
    ro->wakeup_bytes = filters.ringbuf_bytes / 4;
    t->use_sites_ = filters.use_sites;
    t->datapath_on_ = filters.datapath_sample != 0;
    if (!filters.comm.empty()) {
        ro->filter_by_comm = true;
        for (size_t i = 0; i < sizeof(ro->filter_comm); i++)
            ro->filter_comm[i] = i < filters.comm.size() ? filters.comm[i] : 0;
    }
    // Every program is a uprobe or uretprobe; with uprobe_multi links they are loaded for that
    // attach type (and can then be attached no other way).
    t->multi_ = kernel_has_uprobe_multi();
    if (t->multi_) {
        bpf_program* prog = nullptr;
        bpf_object__for_each_program(prog, t->skel_->obj) {
            bpf_program__set_expected_attach_type(prog,
                                                  static_cast<bpf_attach_type>(kAttachUprobeMulti));
        }
    }
    if (int err = bpf_map__set_max_entries(t->skel_->maps.events, filters.ringbuf_bytes)) {
        error = std::string("sizing the ring buffer: ") + std::strerror(-err);
        return nullptr;
    }
    if (int err = verbs_trace_bpf__load(t->skel_)) {
        error = std::string("loading the BPF programs: ") + std::strerror(-err) +
                (err == -EPERM ? " (needs root: CAP_BPF and CAP_PERFMON)" : "");
        return nullptr;
    }
    t->rb_ = ring_buffer__new(bpf_map__fd(t->skel_->maps.events), &VerbsTracer::on_sample, t.get(),
                              nullptr);
    if (!t->rb_) {
        error = std::string("creating the ring buffer reader: ") + std::strerror(errno);
        return nullptr;
    }
    return t;
}

VerbsTracer::~VerbsTracer() {
    detach();
    if (rb_) ring_buffer__free(rb_);
    if (skel_) verbs_trace_bpf__destroy(skel_);
}

// The batch record begins like an event: one header copy serves both.
static_assert(offsetof(insert_trace_batch, ts_ns) == offsetof(insert_trace_event, ts_ns));
static_assert(offsetof(insert_trace_batch, comm) == offsetof(insert_trace_event, comm));
static_assert(offsetof(insert_trace_batch, kind) == offsetof(insert_trace_event, kind));
static_assert(offsetof(insert_trace_batch, obj) == offsetof(insert_trace_event, obj));
static_assert(offsetof(insert_trace_batch, qp_num) == offsetof(insert_trace_event, u));
static_assert(sizeof(sv_trace_send_wr) == SV_TRACE_SEND_WR_SIZE);
static_assert(sizeof(sv_trace_recv_wr) == SV_TRACE_RECV_WR_SIZE);
static_assert(sizeof(ibv_wc) == IBV_WC_SIZE);
static_assert(sizeof(sv_trace_rec) == SV_TRACE_REC_SIZE);
static_assert(sizeof(ibv_wc) == SV_TRACE_WC_SIZE);
static_assert(offsetof(ibv_wc, wc_flags) + sizeof(ibv_wc::wc_flags) <= IBV_WC_SIZE);

int VerbsTracer::on_sample(void* self, void* data, size_t size) {
    auto* t = static_cast<VerbsTracer*>(self);
    t->records_read_++;
    // After this record, stop reading once the deadline has passed: libbpf has consumed the
    // record, and a negative return ends its loop (one clock read per record, ~20 ns, where
    // decoding one costs ~1 us).
    const int go_on = VerbsTracer::Clock::now() < t->read_until_ ? 0 : -ECANCELED;
    if (size >= offsetof(insert_trace_batch, items)) {
        uint32_t kind = 0;
        std::memcpy(&kind, static_cast<const uint8_t*>(data) + offsetof(insert_trace_batch, kind),
                    sizeof(kind));
        if (kind == INSERT_EV_SV_FLUSH_BATCH) {
            insert_trace_batch b{};
            std::memcpy(&b, data, std::min(size, sizeof(b)));
            t->expand_flush(b, size);
            return go_on;
        }
        if (kind == INSERT_EV_POST_SEND_BATCH || kind == INSERT_EV_POST_RECV_BATCH ||
            kind == INSERT_EV_POLL_CQ_BATCH) {
            // Records of one item are shorter than the struct (verbs_trace.bpf.c).
            insert_trace_batch b{};
            std::memcpy(&b, data, std::min(size, sizeof(b)));
            t->expand_batch(b, size);
            return go_on;
        }
    }
    if (size < sizeof(insert_trace_event)) return go_on;
    insert_trace_event e;
    std::memcpy(&e, data, sizeof(e));
    t->handler_(e);
    return go_on;
}

namespace {

// A completion as the application received it -> the event's poll_cq fields.
void fill_poll_cq(insert_ev_poll_cq& p, const uint8_t* raw) {
    ibv_wc wc;
    std::memcpy(&wc, raw, sizeof(wc));
    p.wr_id = wc.wr_id;
    p.status = wc.status;
    p.opcode = wc.opcode;
    p.byte_len = wc.byte_len;
    p.imm_data = wc.imm_data;
    p.qp_num = wc.qp_num;
    p.src_qp = wc.src_qp;
    p.wc_flags = wc.wc_flags;
}

// A send or receive work request (from an entry probe's batch or a softverbs record) ->
// the event's post_send / post_recv fields; `truncated` is the caller's.
void fill_post_send(insert_ev_post_send& p, const sv_trace_send_wr& w, uint32_t qp_num,
                    uint16_t chain_index) {
    p.wr_id = w.wr_id;
    p.remote_addr = w.remote_addr;
    p.total_len = w.length;
    p.qp_num = qp_num;
    p.opcode = w.opcode;
    p.send_flags = w.send_flags;
    p.num_sge = w.num_sge;
    p.rkey = w.rkey;
    p.imm_data = w.imm_data;
    p.remote_qpn = w.remote_qpn;
    p.chain_index = chain_index;
}

void fill_post_recv(insert_ev_post_recv& p, const sv_trace_recv_wr& w, uint32_t qp_num,
                    uint16_t chain_index) {
    p.wr_id = w.wr_id;
    p.total_len = w.length;
    p.qp_num = qp_num;
    p.num_sge = w.num_sge;
    p.chain_index = chain_index;
}

}  // namespace

// One event per work request or completion: the JSON schema (and everything downstream)
// stays one record per item, whichever probe produced it.
void VerbsTracer::expand_batch(const insert_trace_batch& b, size_t size) {
    const size_t header = offsetof(insert_trace_batch, items);
    const size_t item_size = b.kind == INSERT_EV_POST_SEND_BATCH   ? sizeof(sv_trace_send_wr)
                             : b.kind == INSERT_EV_POST_RECV_BATCH ? sizeof(sv_trace_recv_wr)
                                                                   : size_t{IBV_WC_SIZE};
    const size_t n = std::min<size_t>({b.n, INSERT_MAX_BATCH, (size - header) / item_size});
    insert_trace_event e{};
    std::memcpy(&e, &b, offsetof(insert_trace_event, u));
    for (size_t i = 0; i < n; i++) {
        std::memset(&e.u, 0, sizeof(e.u));
        // Bit 0: the chain went on (its last item is cut short); bit 1: an SGE list was cut.
        const auto truncated = [&](uint32_t num_sge) {
            return ((b.truncated & 1) && i + 1 == n) ||
                   ((b.truncated & 2) && num_sge > INSERT_MAX_SGE);
        };
        if (b.kind == INSERT_EV_POST_SEND_BATCH) {
            const sv_trace_send_wr& w = b.items.send[i];
            auto& p = e.u.post_send;
            e.kind = INSERT_EV_POST_SEND;
            fill_post_send(p, w, b.qp_num, static_cast<uint16_t>(b.first_index + i));
            p.truncated = truncated(w.num_sge);
        } else if (b.kind == INSERT_EV_POST_RECV_BATCH) {
            const sv_trace_recv_wr& w = b.items.recv[i];
            auto& p = e.u.post_recv;
            e.kind = INSERT_EV_POST_RECV;
            fill_post_recv(p, w, b.qp_num, static_cast<uint16_t>(b.first_index + i));
            p.truncated = truncated(w.num_sge);
        } else {
            auto& p = e.u.poll_cq;
            e.kind = INSERT_EV_POLL_CQ;
            fill_poll_cq(p, b.items.wc[i]);
            p.index = static_cast<uint16_t>(b.first_index + i);
            p.polled = static_cast<uint16_t>(b.polled);
        }
        handler_(e);
    }
}

// softverbs' records: each is one post_send / post_recv / poll_cq event with its own time
// and objects; the record's header gives the process, thread and its name.
void VerbsTracer::expand_flush(const insert_trace_batch& b, size_t size) {
    const size_t header = offsetof(insert_trace_batch, items);
    const size_t n =
        std::min<size_t>({b.n, INSERT_MAX_BATCH, (size - header) / sizeof(sv_trace_rec)});
    insert_trace_event e{};
    std::memcpy(&e, &b, offsetof(insert_trace_event, u));
    for (size_t i = 0; i < n; i++) {
        const sv_trace_rec& r = b.items.rec[i];
        std::memset(&e.u, 0, sizeof(e.u));
        e.ts_ns = r.t_ns;
        e.ctx = r.ctx;
        e.obj = r.obj;
        e.ret = 0;
        if (r.kind == SV_TRACE_REC_SEND) {
            auto& p = e.u.post_send;
            e.kind = INSERT_EV_POST_SEND;
            fill_post_send(p, r.u.send, r.qp_num, r.index);
            p.truncated = 0;  // softverbs reports every accepted work request
        } else if (r.kind == SV_TRACE_REC_RECV) {
            auto& p = e.u.post_recv;
            e.kind = INSERT_EV_POST_RECV;
            fill_post_recv(p, r.u.recv, r.qp_num, r.index);
            p.truncated = 0;
        } else if (r.kind == SV_TRACE_REC_WC) {
            e.kind = INSERT_EV_POLL_CQ;
            e.ret = static_cast<int32_t>(r.polled);
            fill_poll_cq(e.u.poll_cq, r.u.wc);
            e.u.poll_cq.index = r.index;
            e.u.poll_cq.polled = static_cast<uint16_t>(r.polled);
        } else {
            continue;  // a kind this tracer does not know
        }
        handler_(e);
    }
}

bool VerbsTracer::attach_one(bpf_program* prog, bool retprobe, pid_t pid, const std::string& path,
                             uint64_t offset, std::string& error) {
    Probe p;
    if (multi_)
        p.fd = create_uprobe_multi(bpf_program__fd(prog), path.c_str(), &offset, retprobe,
                                   pid > 0 ? pid : 0);
    else
        p.link = bpf_program__attach_uprobe(prog, retprobe, pid, path.c_str(), offset);
    if (!p.link && p.fd < 0) {
        const int err = errno;
        error = fmt::format("{}+0x{:x}: attaching {} failed: {}", path, offset,
                            retprobe ? "uretprobe" : "uprobe", std::strerror(err));
        return false;
    }
    probes_.push_back(p);
    return true;
}

void VerbsTracer::release(Probe& p) {
    if (p.link) bpf_link__destroy(p.link);
    if (p.fd >= 0) close(p.fd);
    p = Probe{};
}

void VerbsTracer::release_from(size_t first) {
    while (probes_.size() > first) {
        release(probes_.back());
        probes_.pop_back();
    }
}

void VerbsTracer::detach() {
    // Releasing a probe waits for RCU grace periods (the kernel's uprobe_unregister_sync),
    // ~40 ms here: 21 uprobe_multi links one after another took 0.9 s, released by as many
    // threads (whose waits share the grace periods) ~50 ms. A perf event is released under
    // the kernel-wide event_mutex, ~100 ms each whatever the threads (the demo's five
    // tracers took 60-105 s): those are released on this thread.
    constexpr size_t kMaxDetachThreads = 64;
    const size_t n = probes_.size();
    std::atomic<size_t> next{0};
    const auto release_next = [&] {
        for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) release(probes_[i]);
    };
    std::vector<std::thread> threads;
    if (multi_) {
        try {
            for (size_t i = 1; i < std::min(n, kMaxDetachThreads); i++)
                threads.emplace_back(release_next);
        } catch (const std::system_error&) {
            // No more threads: the ones started and this one release the rest.
        }
    }
    release_next();
    for (std::thread& t : threads) t.join();
    probes_.clear();
}

bool VerbsTracer::attach_library(const std::string& path, pid_t pid,
                                 std::vector<std::pair<std::string, uint64_t>>& attached,
                                 std::vector<std::pair<std::string, uint64_t>>& site_list,
                                 bool& already, std::string& error) {
    uint64_t dev = 0, ino = 0;
    if (!file_identity(path, dev, ino)) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    already = libraries_.count({dev, ino}) != 0;
    if (already) return true;
    auto elf = ElfSymbols::load(path, error);
    if (!elf) return false;
    // Resolve everything first so that a wrong file attaches nothing.
    std::vector<std::pair<std::string, uint64_t>> sites;
    for (const VerbProbeSpec& v : kControlVerbs) {
        auto off = elf->function_offset(v.symbol);
        if (!off) {
            if (v.required) {
                error = path + ": does not define " + v.symbol + " (not a libibverbs?)";
                return false;
            }
            continue;
        }
        sites.emplace_back(v.symbol, *off);
    }
    // softverbs' trace site (version SOFTVERBS_TRACE_2): it reports posts and completions
    // alike, so the ops-table functions of this file are not probed.
    std::vector<std::pair<std::string, uint64_t>> trace_sites;
    if (use_sites_ && datapath_on_)
        if (auto off = elf->function_offset(SV_TRACE_SITE_FLUSH))
            trace_sites.emplace_back(SV_TRACE_SITE_FLUSH, *off);
    // All or nothing: a half-probed library would be probed twice by the next attempt.
    const size_t first_link = probes_.size();
    for (const auto& [symbol, off] : sites) {
        ProbePair p = programs_for(skel_, symbol);
        if (!attach_one(p.entry, false, pid, path, off, error) ||
            (p.ret && !attach_one(p.ret, true, pid, path, off, error))) {
            release_from(first_link);
            attached.clear();
            return false;
        }
        attached.emplace_back(symbol, off);
    }
    for (const auto& [symbol, off] : trace_sites) {
        if (!attach_one(skel_->progs.sv_flush_site, false, pid, path, off, error)) {
            release_from(first_link);
            attached.clear();
            site_list.clear();
            return false;
        }
        site_list.emplace_back(symbol, off);
    }
    if (!trace_sites.empty()) site_libraries_.insert({dev, ino});
    libraries_.insert({dev, ino});
    return true;
}

bool VerbsTracer::attach_datapath(DatapathFn fn, const std::string& path, uint64_t offset,
                                  pid_t pid, bool& already, bool& by_site, std::string& error) {
    uint64_t dev = 0, ino = 0;
    if (!file_identity(path, dev, ino)) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    const auto key = std::make_tuple(dev, ino, offset, static_cast<int>(fn));
    by_site = fn != DatapathFn::CreateQpEx && site_libraries_.count({dev, ino}) != 0;
    already = datapath_.count(key) != 0;
    if (already) return true;
    if (by_site) {
        datapath_.insert(key);
        return true;
    }
    auto& p = skel_->progs;
    bool ok = false;
    switch (fn) {
        case DatapathFn::PostSend:
            ok = attach_one(p.post_send_entry, false, pid, path, offset, error);
            break;
        case DatapathFn::PostRecv:
            ok = attach_one(p.post_recv_entry, false, pid, path, offset, error);
            break;
        case DatapathFn::PollCq:
            ok = attach_one(p.poll_cq_entry, false, pid, path, offset, error) &&
                 attach_one(p.poll_cq_return, true, pid, path, offset, error);
            break;
        case DatapathFn::CreateQpEx:
            ok = attach_one(p.create_qp_entry, false, pid, path, offset, error) &&
                 attach_one(p.create_qp_return, true, pid, path, offset, error);
            break;
    }
    if (ok) datapath_.insert(key);
    return ok;
}

int VerbsTracer::read_ring(int timeout_ms, Clock::time_point until, bool& cut) {
    read_until_ = until;
    const uint64_t before = records_read_;
    // Data-path records do not wake the reader (verbs_trace.bpf.c): after a timeout the
    // ring is read anyway.
    int err = timeout_ms > 0 ? ring_buffer__poll(rb_, timeout_ms) : 0;
    if (err >= 0) err = ring_buffer__consume(rb_);
    read_until_ = Clock::time_point::max();
    cut = err == -ECANCELED;
    if (err < 0 && !cut) return err;
    return static_cast<int>(records_read_ - before);
}

int VerbsTracer::poll(int timeout_ms, Clock::time_point until) {
    bool cut = false;
    return read_ring(timeout_ms, until, cut);
}

int VerbsTracer::drain(Clock::time_point until, bool& cut) {
    return read_ring(0, until, cut);
}

Counters VerbsTracer::counters() const {
    Counters c;
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return c;
    std::vector<uint64_t> values(static_cast<size_t>(ncpu));
    const int fd = bpf_map__fd(skel_->maps.counters);
    uint64_t* fields[] = {&c.ringbuf_drops, &c.read_errors, &c.sampled_out};
    for (uint32_t key = 0; key < INSERT_CNT_MAX; key++) {
        if (bpf_map_lookup_elem(fd, &key, values.data()) != 0) continue;
        for (uint64_t v : values) *fields[key] += v;
    }
    return c;
}

}  // namespace insert::hosttrace
