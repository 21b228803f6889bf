// SPDX-License-Identifier: BSD-3-Clause
/* Uprobes on libibverbs' exported control-path verbs and on the provider's data-path
 * functions (found through context->ops by user space). Entry probes stash arguments per
 * thread; return probes read the results and send one event per object or work request. */
// vmlinux.h defines the kernel types the libbpf headers below use: it comes first.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "verbs_trace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Filters, set by user space before load so the verifier drops the unused branches. */
const volatile __u32 filter_tgid = 0;
const volatile __u64 filter_cgroup = 0;
const volatile bool filter_by_comm = false;
const volatile char filter_comm[16] = {};
/* --netns: the inode of the network namespace whose processes are traced (0: any). Checked
 * here, not only in user space: uprobes fire for every process that maps the library, and
 * with one tracer per emulated host each ring would otherwise carry every host's work
 * requests - enough, on a busy host, to fill it and drop another host's control records. */
const volatile __u32 filter_netns = 0;
/* 0: data path off (probes never attached); 1: every call; N: one call in N. */
const volatile __u32 datapath_sample = 1;
/* Data-path records wake the reader only when this much is waiting (set to a fraction of
 * the ring by user space). */
const volatile __u64 wakeup_bytes = 1 << 20;

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 22); /* resized by user space before load */
} events SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, INSERT_CNT_MAX);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

/* Per-CPU sampling clock: avoids a shared cache line between threads posting in parallel. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} sample_clock SEC(".maps");

struct pending_key {
    __u64 pid_tgid;
    __u32 kind;
    __u32 pad;
};

struct pending_call {
    __u64 arg[5];
};

/* Arguments of calls in flight, per thread and verb. LRU: a thread killed inside a verb
 * leaves an entry that ages out instead of filling the map. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct pending_key);
    __type(value, struct pending_call);
} pending SEC(".maps");

static __always_inline void count(__u32 which) {
    __u64* v = bpf_map_lookup_elem(&counters, &which);
    if (v) *v += 1;
}

static __always_inline bool comm_matches(const char* comm) {
    for (int i = 0; i < 16; i++) {
        if (comm[i] != filter_comm[i]) return false;
        if (comm[i] == 0) break;
    }
    return true;
}

static __always_inline bool in_traced_netns(void) {
    if (!filter_netns) return true;
    struct task_struct* task = (struct task_struct*)bpf_get_current_task();
    return BPF_CORE_READ(task, nsproxy, net_ns, ns.inum) == filter_netns;
}

static __always_inline bool traced_task(void) {
    if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid) return false;
    if (filter_cgroup && bpf_get_current_cgroup_id() != filter_cgroup) return false;
    if (!in_traced_netns()) return false;
    if (filter_by_comm) {
        char comm[16];
        bpf_get_current_comm(comm, sizeof(comm));
        return comm_matches(comm);
    }
    return true;
}

static __always_inline bool sampled_in(void) {
    if (datapath_sample <= 1) return true;
    __u32 zero = 0;
    __u64* c = bpf_map_lookup_elem(&sample_clock, &zero);
    if (!c) return true;
    *c += 1;
    if (*c % datapath_sample == 0) return true;
    count(INSERT_CNT_SAMPLED_OUT);
    return false;
}

static __always_inline __u64 read_u64(__u64 addr) {
    __u64 v = 0;
    if (bpf_probe_read_user(&v, sizeof(v), (const void*)addr)) count(INSERT_CNT_READ_ERRORS);
    return v;
}

static __always_inline __u32 read_u32(__u64 addr) {
    __u32 v = 0;
    if (bpf_probe_read_user(&v, sizeof(v), (const void*)addr)) count(INSERT_CNT_READ_ERRORS);
    return v;
}

/* Control-path records are submitted plainly: the reader is woken when it had read
 * everything before them (then a wake-up is what makes the record visible at once), and not
 * when unread records wait - it is awake, or its timer fetches them within kPollTimeoutMs.
 * Forcing a wake-up per record cost ~3 us per control verb here. Reserve and fill the
 * common header; NULL (and a counted drop) when the ring is full. */
static __always_inline struct insert_trace_event* new_event(__u32 kind) {
    struct insert_trace_event* e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
    if (!e) {
        count(INSERT_CNT_RINGBUF_DROPS);
        return NULL;
    }
    __u64 id = bpf_get_current_pid_tgid();
    e->ts_ns = bpf_ktime_get_ns();
    e->cgroup_id = bpf_get_current_cgroup_id();
    e->pid = id >> 32;
    e->tid = (__u32)id;
    bpf_get_current_comm(e->comm, sizeof(e->comm));
    e->kind = kind;
    e->ret = 0;
    e->ctx = 0;
    e->obj = 0;
    __builtin_memset(&e->u, 0, sizeof(e->u));
    return e;
}

static __always_inline void stash(__u32 kind, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __u64 a4) {
    struct pending_key k = {.pid_tgid = bpf_get_current_pid_tgid(), .kind = kind};
    struct pending_call c = {.arg = {a0, a1, a2, a3, a4}};
    bpf_map_update_elem(&pending, &k, &c, BPF_ANY);
}

/* Take the stashed arguments (and forget them). A verb that tail-calls another traced verb
 * (ibv_reg_mr -> ibv_reg_mr_iova2) fires two return probes; only the first finds them. */
static __always_inline bool unstash(__u32 kind, struct pending_call* out) {
    struct pending_key k = {.pid_tgid = bpf_get_current_pid_tgid(), .kind = kind};
    struct pending_call* c = bpf_map_lookup_elem(&pending, &k);
    if (!c) return false;
    *out = *c;
    bpf_map_delete_elem(&pending, &k);
    return true;
}

/* ---- control path ---------------------------------------------------------------- */

SEC("uprobe")
int BPF_KPROBE(open_device_entry, void* device) {
    if (traced_task()) stash(INSERT_EV_OPEN_DEVICE, (__u64)device, 0, 0, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(open_device_return, void* ret) {
    struct pending_call c;
    if (!unstash(INSERT_EV_OPEN_DEVICE, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_OPEN_DEVICE);
    if (!e) return 0;
    e->obj = (__u64)ret;
    e->ctx = (__u64)ret;
    e->ret = ret ? 0 : -1;
    if (bpf_probe_read_user_str(e->u.open_device.dev_name, INSERT_DEV_NAME_LEN,
                                (const void*)(c.arg[0] + IBV_DEVICE_NAME)) < 0)
        count(INSERT_CNT_READ_ERRORS);
    bpf_ringbuf_submit(e, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(query_gid_entry, void* context, __u64 port, __u64 index, void* gid) {
    if (traced_task()) stash(INSERT_EV_QUERY_GID, (__u64)context, port, index, (__u64)gid, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(query_gid_return, int ret) {
    struct pending_call c;
    if (!unstash(INSERT_EV_QUERY_GID, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_QUERY_GID);
    if (!e) return 0;
    e->ret = ret;
    e->ctx = c.arg[0];
    e->obj = c.arg[0];
    e->u.query_gid.port = (__u32)c.arg[1];
    e->u.query_gid.index = (__s32)c.arg[2];
    if (ret == 0 && bpf_probe_read_user(e->u.query_gid.gid, 16, (const void*)c.arg[3]))
        count(INSERT_CNT_READ_ERRORS);
    bpf_ringbuf_submit(e, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(alloc_pd_entry, void* context) {
    if (traced_task()) stash(INSERT_EV_ALLOC_PD, (__u64)context, 0, 0, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_pd_return, void* pd) {
    struct pending_call c;
    if (!unstash(INSERT_EV_ALLOC_PD, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_ALLOC_PD);
    if (!e) return 0;
    e->ctx = c.arg[0];
    e->obj = (__u64)pd;
    e->ret = pd ? 0 : -1;
    bpf_ringbuf_submit(e, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(create_cq_entry, void* context, int cqe) {
    if (traced_task()) stash(INSERT_EV_CREATE_CQ, (__u64)context, (__u64)(__s64)cqe, 0, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(create_cq_return, void* cq) {
    struct pending_call c;
    if (!unstash(INSERT_EV_CREATE_CQ, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_CREATE_CQ);
    if (!e) return 0;
    e->ctx = c.arg[0];
    e->obj = (__u64)cq;
    e->ret = cq ? 0 : -1;
    e->u.create_cq.cqe = (__s32)c.arg[1];
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* ibv_create_qp(pd, init_attr) and, where a library exports it, ibv_create_qp_ex(ctx,
 * attr_ex): both return the QP, whose own fields say everything we report. */
SEC("uprobe")
int BPF_KPROBE(create_qp_entry, void* first) {
    if (traced_task()) stash(INSERT_EV_CREATE_QP, (__u64)first, 0, 0, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(create_qp_return, void* qp) {
    struct pending_call c;
    if (!unstash(INSERT_EV_CREATE_QP, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_CREATE_QP);
    if (!e) return 0;
    e->obj = (__u64)qp;
    e->ret = qp ? 0 : -1;
    if (qp) {
        __u64 q = (__u64)qp;
        e->ctx = read_u64(q + IBV_QP_CONTEXT);
        e->u.create_qp.pd = read_u64(q + IBV_QP_PD);
        e->u.create_qp.send_cq = read_u64(q + IBV_QP_SEND_CQ);
        e->u.create_qp.recv_cq = read_u64(q + IBV_QP_RECV_CQ);
        e->u.create_qp.qp_num = read_u32(q + IBV_QP_QP_NUM);
        e->u.create_qp.qp_type = read_u32(q + IBV_QP_QP_TYPE);
    }
    bpf_ringbuf_submit(e, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(modify_qp_entry, void* qp, void* attr, int mask) {
    if (traced_task()) stash(INSERT_EV_MODIFY_QP, (__u64)qp, (__u64)attr, (__u64)(__u32)mask, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(modify_qp_return, int ret) {
    struct pending_call c;
    if (!unstash(INSERT_EV_MODIFY_QP, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_MODIFY_QP);
    if (!e) return 0;
    e->ret = ret;
    e->obj = c.arg[0];
    e->ctx = read_u64(c.arg[0] + IBV_QP_CONTEXT);
    e->u.modify_qp.qp_num = read_u32(c.arg[0] + IBV_QP_QP_NUM);
    e->u.modify_qp.attr_mask = (__u32)c.arg[2];
    if (bpf_probe_read_user(e->u.modify_qp.attr, INSERT_QP_ATTR_SIZE, (const void*)c.arg[1]))
        count(INSERT_CNT_READ_ERRORS);
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* Entry only: the QP is gone after the call, and the result adds nothing to the record. */
SEC("uprobe")
int BPF_KPROBE(destroy_qp_entry, void* qp) {
    if (!traced_task()) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_DESTROY_QP);
    if (!e) return 0;
    e->obj = (__u64)qp;
    e->ctx = read_u64((__u64)qp + IBV_QP_CONTEXT);
    e->u.destroy_qp.qp_num = read_u32((__u64)qp + IBV_QP_QP_NUM);
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* ibv_reg_mr(pd, addr, length, access) */
SEC("uprobe")
int BPF_KPROBE(reg_mr_entry, void* pd, void* addr, __u64 length, int access) {
    if (traced_task())
        stash(INSERT_EV_REG_MR, (__u64)pd, (__u64)addr, length, (__u64)addr, (__u64)(__u32)access);
    return 0;
}

/* ibv_reg_mr_iova(pd, addr, length, iova, access) and ibv_reg_mr_iova2 (same order). */
SEC("uprobe")
int BPF_KPROBE(reg_mr_iova_entry, void* pd, void* addr, __u64 length, __u64 iova, __u64 access) {
    if (traced_task())
        stash(INSERT_EV_REG_MR, (__u64)pd, (__u64)addr, length, iova, (__u64)(__u32)access);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(reg_mr_return, void* mr) {
    struct pending_call c;
    if (!unstash(INSERT_EV_REG_MR, &c)) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_REG_MR);
    if (!e) return 0;
    e->obj = (__u64)mr;
    e->ret = mr ? 0 : -1;
    e->ctx = read_u64(c.arg[0] + IBV_PD_CONTEXT);
    e->u.mr.pd = c.arg[0];
    e->u.mr.addr = c.arg[1];
    e->u.mr.length = c.arg[2];
    e->u.mr.iova = c.arg[3];
    e->u.mr.access = (__u32)c.arg[4];
    if (mr) {
        e->u.mr.lkey = read_u32((__u64)mr + IBV_MR_LKEY);
        e->u.mr.rkey = read_u32((__u64)mr + IBV_MR_RKEY);
    }
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* Entry only: the keys must be read before the MR is freed. */
SEC("uprobe")
int BPF_KPROBE(dereg_mr_entry, void* mr) {
    if (!traced_task()) return 0;
    struct insert_trace_event* e = new_event(INSERT_EV_DEREG_MR);
    if (!e) return 0;
    __u64 m = (__u64)mr;
    e->obj = m;
    e->ctx = read_u64(m + IBV_MR_CONTEXT);
    e->u.mr.addr = read_u64(m + IBV_MR_ADDR);
    e->u.mr.length = read_u64(m + IBV_MR_LENGTH);
    e->u.mr.lkey = read_u32(m + IBV_MR_LKEY);
    e->u.mr.rkey = read_u32(m + IBV_MR_RKEY);
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* ---- data path ------------------------------------------------------------------- */

/* The consumer is not woken per data-path record: a wake-up (irq_work, a self-IPI on x86,
 * which exits to the hypervisor in a VM) costs the traced thread 0.7 us (reader in the same
 * process) to ~3 us (insert-trace reading) here, as much as or more than the event. User space
 * reads the ring on a short timer instead. The record that makes more than wakeup_bytes wait wakes
 * it at once, so a burst cannot fill the ring while the reader sleeps; the records after it do not
 * (the reader is awake and draining, and a wake-up per record would cost the most exactly when the
 * reader is behind). `size`: this record's reservation. */
static __always_inline __u64 datapath_submit_flags(__u64 size) {
    __u64 waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA); /* includes this record */
    return waiting >= wakeup_bytes && waiting < wakeup_bytes + size + 8 ? BPF_RB_FORCE_WAKEUP
                                                                        : BPF_RB_NO_WAKEUP;
}

/* Clamps a copy size for the verifier. The compiler knows the size is already in range
 * (the item count was clamped) and would drop a plain check; the empty asm hides the value
 * from it, so the check the verifier needs stays in the program. */
static __always_inline __u64 bound_size(__u64 v, __u64 max) {
    asm volatile("" : "+r"(v));
    return v > max ? max : v;
}

static __always_inline void count_drops(__u32 items) {
    __u32 which = INSERT_CNT_RINGBUF_DROPS;
    __u64* v = bpf_map_lookup_elem(&counters, &which);
    if (v) *v += items;
}

/* `items`: what a full ring loses - the drop counter counts work requests and
 * completions, as the output does. `bytes`: the reservation, a constant after inlining (the
 * verifier requires one): the full record, or the header and the items a call is known to
 * have. */
static __always_inline struct insert_trace_batch* new_batch(__u32 kind, __u64 ctx, __u64 obj,
                                                            __u32 items, __u64 bytes) {
    struct insert_trace_batch* b = bpf_ringbuf_reserve(&events, bytes, 0);
    if (!b) {
        count_drops(items);
        return NULL;
    }
    __u64 id = bpf_get_current_pid_tgid();
    b->ts_ns = bpf_ktime_get_ns();
    b->cgroup_id = bpf_get_current_cgroup_id();
    b->pid = id >> 32;
    b->tid = (__u32)id;
    bpf_get_current_comm(b->comm, sizeof(b->comm));
    b->kind = kind;
    b->ret = 0;
    b->ctx = ctx;
    b->obj = obj;
    b->qp_num = 0;
    b->n = 0;
    b->first_index = 0;
    b->polled = 0;
    b->truncated = 0;
    b->pad = 0;
    return b;
}

#define BATCH_HEADER __builtin_offsetof(struct insert_trace_batch, items)

/* One record of `cap` items (a constant: 1 or INSERT_MAX_BATCH) holding n <= cap of them
 * (entry probes). */
static __always_inline void emit_batch(__u32 kind, __u64 vctx, __u64 obj, __u32 qp_num,
                                       const void* items, __u32 n, __u32 first_index,
                                       const __u32 item_size, __u32 polled, const __u32 cap) {
    const __u64 reserve = BATCH_HEADER + (__u64)cap * item_size;
    struct insert_trace_batch* b = new_batch(kind, vctx, obj, n, reserve);
    if (!b) return;
    b->qp_num = qp_num;
    b->n = n;
    b->first_index = first_index;
    b->polled = polled;
    b->ret = polled;
    __u64 bytes = bound_size((__u64)n * item_size, (__u64)cap * item_size);
    if (bpf_probe_read_user(&b->items, bytes, items)) count(INSERT_CNT_READ_ERRORS);
    bpf_ringbuf_submit(b, datapath_submit_flags(reserve));
}

/* ---- softverbs' trace site ------------------------------------------------------- */

/* sample:N at the site: one record in N (per CPU), counted over records rather than site
 * calls (a call carries up to 16 records of several verbs). How many of [base, base + n)
 * are multiples of N. */
static __always_inline __u32 sampled_count(__u64 base, __u32 n) {
    return (__u32)((base + n + datapath_sample - 1) / datapath_sample -
                   (base + datapath_sample - 1) / datapath_sample);
}

/* One ring-buffer record of `cap` slots (a constant: the verifier wants a constant
 * reservation) for n <= cap records copied with one bpf_probe_read_user. The records carry
 * their own times, objects and fields; the header says whose they are. */
static __always_inline void emit_flush(const void* recs, __u32 n, __u32 owner_tid,
                                       const char* owner_comm, bool own, __u64 base,
                                       const __u32 cap) {
    const __u64 reserve = BATCH_HEADER + (__u64)cap * SV_TRACE_REC_SIZE;
    __u32 kept = datapath_sample > 1 ? sampled_count(base, n) : n;
    struct insert_trace_batch* b = bpf_ringbuf_reserve(&events, reserve, 0);
    if (!b) {
        count_drops(kept);
        return;
    }
    __u64 id = bpf_get_current_pid_tgid();
    b->ts_ns = bpf_ktime_get_ns(); /* the flush; each record has its own time */
    b->cgroup_id = bpf_get_current_cgroup_id();
    b->pid = id >> 32;
    b->tid = owner_tid;
    if (own)
        bpf_get_current_comm(b->comm, sizeof(b->comm));
    else if (bpf_probe_read_user(b->comm, sizeof(b->comm), owner_comm))
        count(INSERT_CNT_READ_ERRORS);
    b->kind = INSERT_EV_SV_FLUSH_BATCH;
    b->ret = 0;
    b->ctx = 0;
    b->obj = 0;
    b->qp_num = 0;
    b->first_index = 0;
    b->polled = 0;
    b->truncated = 0;
    b->pad = 0;
    __u64 bytes = bound_size((__u64)n * SV_TRACE_REC_SIZE, (__u64)cap * SV_TRACE_REC_SIZE);
    if (bpf_probe_read_user(&b->items, bytes, recs)) count(INSERT_CNT_READ_ERRORS);
    if (datapath_sample > 1) {
        /* Keep records base + i that are multiples of N, moved to the front. */
        __u32 k = 0;
        for (__u32 i = 0; i < cap; i++) {
            if (i >= n) break;
            if ((base + i) % datapath_sample) continue;
            if (k != i)
                __builtin_memcpy(&b->items.rec[k & (cap - 1)], &b->items.rec[i & (cap - 1)],
                                 SV_TRACE_REC_SIZE);
            k++;
        }
        n = k;
    }
    b->n = n;
    bpf_ringbuf_submit(b, datapath_submit_flags(reserve));
}

/* softverbs_trace_flush(recs, n, tid, comm): up to 16 records of thread `tid` - usually the
 * caller; softverbs' flusher thread reports a thread that went quiet, and then the name
 * comes from softverbs' copy. Filters apply to the records' thread. */
SEC("uprobe")
int BPF_KPROBE(sv_flush_site, const void* recs, __u32 n, __u32 owner_tid, const char* owner_comm) {
    if (n == 0) return 0;
    if (n > INSERT_MAX_BATCH) n = INSERT_MAX_BATCH;
    __u64 id = bpf_get_current_pid_tgid();
    if (filter_tgid && (id >> 32) != filter_tgid) return 0;
    if (filter_cgroup && bpf_get_current_cgroup_id() != filter_cgroup) return 0;
    if (!in_traced_netns()) return 0;
    const bool own = (__u32)id == owner_tid;
    if (filter_by_comm) {
        char comm[16] = {};
        if (own)
            bpf_get_current_comm(comm, sizeof(comm));
        else
            bpf_probe_read_user(comm, sizeof(comm), owner_comm);
        if (!comm_matches(comm)) return 0;
    }
    __u64 base = 0;
    if (datapath_sample > 1) {
        __u32 zero = 0;
        __u64* c = bpf_map_lookup_elem(&sample_clock, &zero);
        if (c) {
            base = *c;
            *c += n;
        }
        __u32 kept = sampled_count(base, n);
        __u32 which = INSERT_CNT_SAMPLED_OUT;
        __u64* v = bpf_map_lookup_elem(&counters, &which);
        if (v) *v += n - kept;
        if (!kept) return 0;
    }
    /* A flush by the thread's owner carries 16 records (or what waited at a tick or an
     * exit): a small record for the latter keeps a quiet application's ring usage low. */
    if (n <= 4)
        emit_flush(recs, n, owner_tid, owner_comm, own, base, 4);
    else
        emit_flush(recs, n, owner_tid, owner_comm, own, base, INSERT_MAX_BATCH);
    return 0;
}

/* Entry probes on a provider's ops functions (no trace sites: rdma-core's providers).
 * Each user-memory read costs ~0.1-0.2 us here, so every struct is copied once: the QP's
 * head, each work request's fixed part, each SGE list. */

struct qp_head {
    __u64 context, qp_context, pd, send_cq, recv_cq, srq;
    __u32 handle, qp_num;
};

static __always_inline __u32 sge_total(__u64 sg_list, __u32 num_sge, __u16* truncated) {
    struct {
        __u64 addr;
        __u32 length, lkey;
    } sge[INSERT_MAX_SGE] = {};
    _Static_assert(sizeof(sge[0]) == IBV_SGE_SIZE, "sge layout");
    __u32 n = num_sge;
    if (n > INSERT_MAX_SGE) {
        n = INSERT_MAX_SGE;
        *truncated |= 2;
    }
    __u64 bytes = bound_size((__u64)n * IBV_SGE_SIZE, sizeof(sge));
    if (bytes && bpf_probe_read_user(sge, bytes, (const void*)sg_list))
        count(INSERT_CNT_READ_ERRORS);
    __u32 total = 0;
    for (int i = 0; i < INSERT_MAX_SGE; i++) {
        if (i >= n) break;
        total += sge[i].length;
    }
    return total;
}

/* Work requests in a chain (up to INSERT_MAX_BATCH), for the drop counter: only called
 * when the ring is full, so the extra reads do not matter. */
static __noinline __u32 chain_length(__u64 w) {
    __u32 n = 0;
    for (int i = 0; i < INSERT_MAX_BATCH; i++) {
        if (!w) break;
        n++;
        w = read_u64(w + IBV_SEND_WR_NEXT); /* == IBV_RECV_WR_NEXT */
    }
    return n;
}

static __always_inline bool read_qp_head(__u64 qp, struct qp_head* h) {
    _Static_assert(__builtin_offsetof(struct qp_head, qp_num) == IBV_QP_QP_NUM, "qp layout");
    _Static_assert(sizeof(struct qp_head) == IBV_QP_HEAD_SIZE, "qp layout");
    if (!bpf_probe_read_user(h, sizeof(*h), (const void*)qp)) return true;
    count(INSERT_CNT_READ_ERRORS);
    return false;
}

/* The fixed part of struct ibv_send_wr / ibv_recv_wr, copied with one read each. */
struct send_wr_head {
    __u64 wr_id, next, sg_list;
    __u32 num_sge, opcode, send_flags, imm_data;
    __u64 remote_addr; /* wr.rdma / wr.atomic / wr.ud.ah */
    __u32 word48;      /* wr.rdma.rkey / wr.ud.remote_qpn / low half of compare_add */
    __u32 word52;
    __u64 word56, word64;
};
_Static_assert(__builtin_offsetof(struct send_wr_head, next) == IBV_SEND_WR_NEXT, "wr layout");
_Static_assert(__builtin_offsetof(struct send_wr_head, num_sge) == IBV_SEND_WR_NUM_SGE,
               "wr layout");
_Static_assert(__builtin_offsetof(struct send_wr_head, imm_data) == IBV_SEND_WR_IMM_DATA,
               "wr layout");
_Static_assert(__builtin_offsetof(struct send_wr_head, remote_addr) == IBV_SEND_WR_REMOTE_ADDR,
               "wr layout");
_Static_assert(__builtin_offsetof(struct send_wr_head, word48) == IBV_SEND_WR_RDMA_RKEY,
               "wr layout");
_Static_assert(__builtin_offsetof(struct send_wr_head, word64) == IBV_SEND_WR_ATOMIC_RKEY,
               "wr layout");

struct recv_wr_head {
    __u64 wr_id, next, sg_list;
    __u32 num_sge, pad;
};
_Static_assert(__builtin_offsetof(struct recv_wr_head, next) == IBV_RECV_WR_NEXT, "wr layout");
_Static_assert(__builtin_offsetof(struct recv_wr_head, num_sge) == IBV_RECV_WR_NUM_SGE,
               "wr layout");

static __always_inline bool read_wr(__u64 w, void* head, __u32 size) {
    if (!bpf_probe_read_user(head, size, (const void*)w)) return true;
    count(INSERT_CNT_READ_ERRORS);
    return false;
}

static __always_inline void fill_send(struct sv_trace_send_wr* r, const struct send_wr_head* v,
                                      __u16* truncated) {
    bool atomic = v->opcode == IBV_WR_ATOMIC_CMP_AND_SWP_VALUE ||
                  v->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD_VALUE;
    r->wr_id = v->wr_id;
    r->remote_addr = v->remote_addr;
    r->length = sge_total(v->sg_list, v->num_sge, truncated);
    r->rkey = atomic ? (__u32)v->word64 : v->word48;
    r->imm_data = v->imm_data;
    r->remote_qpn = v->word48;
    r->send_flags = v->send_flags;
    r->opcode = (__u16)v->opcode;
    r->num_sge = (__u16)v->num_sge;
}

static __always_inline void fill_recv(struct sv_trace_recv_wr* r, const struct recv_wr_head* v,
                                      __u16* truncated) {
    r->wr_id = v->wr_id;
    r->length = sge_total(v->sg_list, v->num_sge, truncated);
    r->num_sge = v->num_sge;
}

/* One record for a chain whose first work request is already read: `cap` (a constant) is 1
 * when that one is the whole chain - a record of its size, as at the trace sites - else
 * INSERT_MAX_BATCH, and the rest of the chain is read into it. */
#define EMIT_CHAIN(KIND, ITEMS, HEAD, FILL, ITEM_SIZE, qp, h, first, cap)                        \
    do {                                                                                         \
        struct insert_trace_batch* b =                                                           \
            new_batch(KIND, (h)->context, qp, 0, BATCH_HEADER + (__u64)(cap) * (ITEM_SIZE));     \
        if (!b) {                                                                                \
            count_drops((cap) == 1 ? 1 : 1 + chain_length((first)->next));                       \
            break;                                                                               \
        }                                                                                        \
        b->qp_num = (h)->qp_num;                                                                 \
        __u16 truncated = 0;                                                                     \
        FILL(&b->items.ITEMS[0], first, &truncated);                                             \
        __u64 w = (first)->next;                                                                 \
        int i = 1;                                                                               \
        for (; i < (cap); i++) {                                                                 \
            if (!w) break;                                                                       \
            struct HEAD v = {};                                                                  \
            if (!read_wr(w, &v, sizeof(v))) break;                                               \
            FILL(&b->items.ITEMS[i], &v, &truncated);                                            \
            w = v.next;                                                                          \
        }                                                                                        \
        if (w && i == (cap)) truncated |= 1;                                                     \
        b->n = i;                                                                                \
        b->truncated = truncated;                                                                \
        bpf_ringbuf_submit(b, datapath_submit_flags(BATCH_HEADER + (__u64)(cap) * (ITEM_SIZE))); \
    } while (0)

/* provider post_send(qp, wr, bad_wr): one record for the chain's first INSERT_MAX_BATCH
 * work requests. */
SEC("uprobe")
int BPF_KPROBE(post_send_entry, void* qp, void* wr) {
    if (!traced_task() || !sampled_in() || !wr) return 0;
    struct qp_head h = {};
    read_qp_head((__u64)qp, &h);
    struct send_wr_head first = {};
    if (!read_wr((__u64)wr, &first, sizeof(first))) return 0;
    if (!first.next)
        EMIT_CHAIN(INSERT_EV_POST_SEND_BATCH, send, send_wr_head, fill_send, SV_TRACE_SEND_WR_SIZE,
                   (__u64)qp, &h, &first, 1);
    else
        EMIT_CHAIN(INSERT_EV_POST_SEND_BATCH, send, send_wr_head, fill_send, SV_TRACE_SEND_WR_SIZE,
                   (__u64)qp, &h, &first, INSERT_MAX_BATCH);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(post_recv_entry, void* qp, void* wr) {
    if (!traced_task() || !sampled_in() || !wr) return 0;
    struct qp_head h = {};
    read_qp_head((__u64)qp, &h);
    struct recv_wr_head first = {};
    if (!read_wr((__u64)wr, &first, sizeof(first))) return 0;
    if (!first.next)
        EMIT_CHAIN(INSERT_EV_POST_RECV_BATCH, recv, recv_wr_head, fill_recv, SV_TRACE_RECV_WR_SIZE,
                   (__u64)qp, &h, &first, 1);
    else
        EMIT_CHAIN(INSERT_EV_POST_RECV_BATCH, recv, recv_wr_head, fill_recv, SV_TRACE_RECV_WR_SIZE,
                   (__u64)qp, &h, &first, INSERT_MAX_BATCH);
    return 0;
}

/* provider poll_cq(cq, num_entries, wc): the completions exist only after the return. */
SEC("uprobe")
int BPF_KPROBE(poll_cq_entry, void* cq, int num_entries, void* wc) {
    if (!traced_task() || !sampled_in()) return 0;
    stash(INSERT_EV_POLL_CQ, (__u64)cq, (__u64)wc, 0, 0, 0);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(poll_cq_return, int polled) {
    struct pending_call c;
    if (!unstash(INSERT_EV_POLL_CQ, &c) || polled <= 0) return 0;
    __u64 vctx = read_u64(c.arg[0] + IBV_CQ_CONTEXT);
    const void* wc = (const void*)c.arg[1];
    if (polled == 1)
        emit_batch(INSERT_EV_POLL_CQ_BATCH, vctx, c.arg[0], 0, wc, 1, 0, IBV_WC_SIZE, 1, 1);
    else
        emit_batch(INSERT_EV_POLL_CQ_BATCH, vctx, c.arg[0], 0, wc,
                   polled > INSERT_MAX_BATCH ? INSERT_MAX_BATCH : polled, 0, IBV_WC_SIZE, polled,
                   INSERT_MAX_BATCH);
    return 0;
}
