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
/* 0: data path off (probes never attached); 1: every call; N: one call in N. */
const volatile __u32 datapath_sample = 1;

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

static __always_inline bool traced_task(void) {
    if (filter_tgid && (bpf_get_current_pid_tgid() >> 32) != filter_tgid) return false;
    if (filter_cgroup && bpf_get_current_cgroup_id() != filter_cgroup) return false;
    if (filter_by_comm) {
        char comm[16];
        bpf_get_current_comm(comm, sizeof(comm));
        for (int i = 0; i < 16; i++) {
            if (comm[i] != filter_comm[i]) return false;
            if (comm[i] == 0) break;
        }
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

/* Reserve and fill the common header; NULL (and a counted drop) when the ring is full. */
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

/* ---- data path (provider functions behind context->ops) -------------------------- */

static __always_inline __u64 sge_total(__u64 sg_list, __u32 num_sge, __u16* truncated) {
    __u64 total = 0;
    for (int i = 0; i < INSERT_MAX_SGE; i++) {
        if (i >= num_sge) break;
        total += read_u32(sg_list + i * IBV_SGE_SIZE + IBV_SGE_LENGTH);
    }
    if (num_sge > INSERT_MAX_SGE) *truncated = 1;
    return total;
}

/* provider post_send(qp, wr, bad_wr): one event per work request of the chain. */
SEC("uprobe")
int BPF_KPROBE(post_send_entry, void* qp, void* wr) {
    if (!traced_task() || !sampled_in()) return 0;
    __u64 q = (__u64)qp;
    __u64 vctx = read_u64(q + IBV_QP_CONTEXT);
    __u32 qp_num = read_u32(q + IBV_QP_QP_NUM);
    __u64 w = (__u64)wr;
    for (int i = 0; i < INSERT_MAX_WR_CHAIN; i++) {
        if (!w) break;
        struct insert_trace_event* e = new_event(INSERT_EV_POST_SEND);
        if (!e) return 0;
        struct insert_ev_post_send* p = &e->u.post_send;
        /* One copy of the work request's fixed part instead of a read per field: each
         * bpf_probe_read_user costs about as much as the rest of the program. */
        struct {
            __u64 wr_id, next, sg_list;
            __u32 num_sge, opcode, send_flags, imm_data;
            __u64 remote_addr; /* wr.rdma / wr.atomic / wr.ud.ah */
            __u32 word48;      /* wr.rdma.rkey / wr.ud.remote_qpn / low half of compare_add */
            __u32 word52;
            __u64 word56, word64;
        } wrv = {};
        _Static_assert(__builtin_offsetof(typeof(wrv), num_sge) == IBV_SEND_WR_NUM_SGE,
                       "wr layout");
        _Static_assert(__builtin_offsetof(typeof(wrv), imm_data) == IBV_SEND_WR_IMM_DATA,
                       "wr layout");
        _Static_assert(__builtin_offsetof(typeof(wrv), remote_addr) == IBV_SEND_WR_REMOTE_ADDR,
                       "wr layout");
        _Static_assert(__builtin_offsetof(typeof(wrv), word48) == IBV_SEND_WR_RDMA_RKEY,
                       "wr layout");
        _Static_assert(__builtin_offsetof(typeof(wrv), word64) == IBV_SEND_WR_ATOMIC_RKEY,
                       "wr layout");
        if (bpf_probe_read_user(&wrv, sizeof(wrv), (const void*)w)) count(INSERT_CNT_READ_ERRORS);
        e->obj = q;
        e->ctx = vctx;
        p->qp_num = qp_num;
        p->chain_index = i;
        p->wr_id = wrv.wr_id;
        p->num_sge = wrv.num_sge;
        p->opcode = wrv.opcode;
        p->send_flags = wrv.send_flags;
        p->imm_data = wrv.imm_data;
        p->remote_addr = wrv.remote_addr;
        bool atomic = p->opcode == IBV_WR_ATOMIC_CMP_AND_SWP_VALUE ||
                      p->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD_VALUE;
        p->rkey = atomic ? (__u32)wrv.word64 : wrv.word48;
        p->remote_qpn = wrv.word48;
        __u16 truncated = 0;
        p->total_len = sge_total(wrv.sg_list, p->num_sge, &truncated);
        w = wrv.next;
        if (w && i == INSERT_MAX_WR_CHAIN - 1) truncated = 1;
        p->truncated = truncated;
        bpf_ringbuf_submit(e, 0);
    }
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(post_recv_entry, void* qp, void* wr) {
    if (!traced_task() || !sampled_in()) return 0;
    __u64 q = (__u64)qp;
    __u64 vctx = read_u64(q + IBV_QP_CONTEXT);
    __u32 qp_num = read_u32(q + IBV_QP_QP_NUM);
    __u64 w = (__u64)wr;
    for (int i = 0; i < INSERT_MAX_WR_CHAIN; i++) {
        if (!w) break;
        struct insert_trace_event* e = new_event(INSERT_EV_POST_RECV);
        if (!e) return 0;
        struct insert_ev_post_recv* p = &e->u.post_recv;
        e->obj = q;
        e->ctx = vctx;
        p->qp_num = qp_num;
        p->chain_index = i;
        p->wr_id = read_u64(w + IBV_RECV_WR_WR_ID);
        p->num_sge = read_u32(w + IBV_RECV_WR_NUM_SGE);
        __u16 truncated = 0;
        p->total_len = sge_total(read_u64(w + IBV_RECV_WR_SG_LIST), p->num_sge, &truncated);
        w = read_u64(w + IBV_RECV_WR_NEXT);
        if (w && i == INSERT_MAX_WR_CHAIN - 1) truncated = 1;
        p->truncated = truncated;
        bpf_ringbuf_submit(e, 0);
    }
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
    for (int i = 0; i < INSERT_MAX_WC; i++) {
        if (i >= polled) break;
        struct insert_trace_event* e = new_event(INSERT_EV_POLL_CQ);
        if (!e) return 0;
        __u64 w = c.arg[1] + i * IBV_WC_SIZE;
        struct insert_ev_poll_cq* p = &e->u.poll_cq;
        e->obj = c.arg[0];
        e->ctx = vctx;
        e->ret = polled;
        p->index = i;
        p->polled = polled;
        struct {
            __u64 wr_id;
            __u32 status, opcode, vendor_err, byte_len, imm_data, qp_num, src_qp, wc_flags;
        } wcv = {};
        if (bpf_probe_read_user(&wcv, sizeof(wcv), (const void*)w)) count(INSERT_CNT_READ_ERRORS);
        p->wr_id = wcv.wr_id;
        p->status = wcv.status;
        p->opcode = wcv.opcode;
        p->byte_len = wcv.byte_len;
        p->imm_data = wcv.imm_data;
        p->qp_num = wcv.qp_num;
        p->src_qp = wcv.src_qp;
        p->wc_flags = wcv.wc_flags;
        bpf_ringbuf_submit(e, 0);
    }
    return 0;
}
