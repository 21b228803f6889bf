/* Events that verbs_trace.bpf.c sends to user space through the ring buffer, and the
 * libibverbs struct offsets the BPF side reads user memory with. One definition for both
 * sides: the BPF program includes it after vmlinux.h, user space after <linux/types.h>;
 * verbs_layout.cpp checks every offset against <infiniband/verbs.h> at compile time. */
#ifndef INSERT_HOSTTRACE_VERBS_TRACE_H
#define INSERT_HOSTTRACE_VERBS_TRACE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#include "../softverbs/trace_sites.h"

enum insert_trace_kind {
    INSERT_EV_OPEN_DEVICE = 1,
    INSERT_EV_QUERY_GID = 2,
    INSERT_EV_ALLOC_PD = 3,
    INSERT_EV_CREATE_CQ = 4,
    INSERT_EV_CREATE_QP = 5,
    INSERT_EV_MODIFY_QP = 6,
    INSERT_EV_DESTROY_QP = 7,
    INSERT_EV_REG_MR = 8,
    INSERT_EV_DEREG_MR = 9,
    INSERT_EV_POST_SEND = 10,
    INSERT_EV_POST_RECV = 11,
    INSERT_EV_POLL_CQ = 12,
    /* Ring-buffer records only: an entry probe sends one record per call with up to
     * INSERT_MAX_BATCH work requests or completions (struct insert_trace_batch); user space
     * expands it into one POST_SEND / POST_RECV / POLL_CQ event per item. One reservation
     * per call instead of per item. */
    INSERT_EV_POST_SEND_BATCH = 20,
    INSERT_EV_POST_RECV_BATCH = 21,
    INSERT_EV_POLL_CQ_BATCH = 22,
    /* softverbs' trace site: up to INSERT_MAX_BATCH struct sv_trace_rec of one thread, each
     * a post or a completion with its own time; copied with one bpf_probe_read_user. */
    INSERT_EV_SV_FLUSH_BATCH = 23,
};

/* Bounds on what one probe hit copies: BPF loops must be bounded, and a work-request
 * chain or a poll batch longer than this is reported as truncated, not silently cut. */
#define INSERT_MAX_WR_CHAIN 16
#define INSERT_MAX_SGE 8
#define INSERT_MAX_WC 16
#define INSERT_MAX_BATCH SV_TRACE_MAX_BATCH
#define INSERT_DEV_NAME_LEN 64
#define INSERT_QP_ATTR_SIZE 144 /* sizeof(struct ibv_qp_attr) */

/* Offsets into libibverbs' public structs (rdma-core verbs.h, x86-64 LP64 ABI). */
#define IBV_CONTEXT_DEVICE 0
#define IBV_CONTEXT_OPS 8
#define IBV_OPS_POLL_CQ 88
#define IBV_OPS_POST_SEND 200
#define IBV_OPS_POST_RECV 208
#define IBV_CONTEXT_ABI_COMPAT 320
/* struct verbs_context ends with struct ibv_context: its extension fields sit at negative
 * offsets from the ibv_context pointer that applications hold. */
#define VERBS_CONTEXT_SZ_FROM_CONTEXT (-8)
#define VERBS_CONTEXT_CREATE_QP_EX_FROM_CONTEXT (-56)
#define VERBS_CONTEXT_CREATE_QP_EX_MIN_SZ 384 /* vctx->sz needed for create_qp_ex to exist */
#define IBV_DEVICE_NAME 24
#define IBV_QP_CONTEXT 0
#define IBV_QP_PD 16
#define IBV_QP_SEND_CQ 24
#define IBV_QP_RECV_CQ 32
#define IBV_QP_QP_NUM 52
#define IBV_QP_QP_TYPE 60
#define IBV_PD_CONTEXT 0
#define IBV_CQ_CONTEXT 0
#define IBV_MR_CONTEXT 0
#define IBV_MR_ADDR 16
#define IBV_MR_LENGTH 24
#define IBV_MR_LKEY 36
#define IBV_MR_RKEY 40
#define IBV_QP_HEAD_SIZE 56 /* context .. qp_num: read in one copy */
#define IBV_SEND_WR_WR_ID 0
#define IBV_SEND_WR_NEXT 8
#define IBV_SEND_WR_SG_LIST 16
#define IBV_SEND_WR_NUM_SGE 24
#define IBV_SEND_WR_OPCODE 28
#define IBV_SEND_WR_SEND_FLAGS 32
#define IBV_SEND_WR_IMM_DATA 36
#define IBV_SEND_WR_REMOTE_ADDR 40 /* wr.rdma.remote_addr == wr.atomic.remote_addr */
#define IBV_SEND_WR_RDMA_RKEY 48
#define IBV_SEND_WR_ATOMIC_RKEY 64
#define IBV_SEND_WR_UD_REMOTE_QPN 48
#define IBV_RECV_WR_WR_ID 0
#define IBV_RECV_WR_NEXT 8
#define IBV_RECV_WR_SG_LIST 16
#define IBV_RECV_WR_NUM_SGE 24
#define IBV_SGE_SIZE 16
#define IBV_SGE_LENGTH 8
#define IBV_WC_SIZE 48
/* ibv_wr_opcode values that carry wr.atomic instead of wr.rdma. */
#define IBV_WR_ATOMIC_CMP_AND_SWP_VALUE 5
#define IBV_WR_ATOMIC_FETCH_AND_ADD_VALUE 6

struct insert_ev_open_device {
    char dev_name[INSERT_DEV_NAME_LEN];
};

struct insert_ev_query_gid {
    __u32 port;
    __s32 index;
    __u8 gid[16];
};

struct insert_ev_create_cq {
    __s32 cqe;
    __u32 pad;
};

struct insert_ev_create_qp {
    __u64 pd;
    __u64 send_cq;
    __u64 recv_cq;
    __u32 qp_num;
    __u32 qp_type;
};

struct insert_ev_modify_qp {
    __u32 qp_num;
    __u32 attr_mask;
    __u8 attr[INSERT_QP_ATTR_SIZE]; /* struct ibv_qp_attr, decoded in user space */
};

struct insert_ev_destroy_qp {
    __u32 qp_num;
    __u32 pad;
};

struct insert_ev_mr {
    __u64 pd;
    __u64 addr;
    __u64 length;
    __u64 iova;
    __u32 access;
    __u32 lkey;
    __u32 rkey;
    __u32 pad;
};

struct insert_ev_post_send {
    __u64 wr_id;
    __u64 remote_addr;
    __u64 total_len;
    __u32 qp_num;
    __u32 opcode;
    __u32 send_flags;
    __u32 num_sge;
    __u32 rkey;
    __u32 imm_data; /* network byte order, as the application wrote it */
    __u32 remote_qpn;
    __u16 chain_index; /* position in the wr->next chain */
    __u16 truncated;   /* 1: chain longer than INSERT_MAX_WR_CHAIN or sg_list longer than
                          INSERT_MAX_SGE */
};

struct insert_ev_post_recv {
    __u64 wr_id;
    __u64 total_len;
    __u32 qp_num;
    __u32 num_sge;
    __u16 chain_index;
    __u16 truncated;
    __u32 pad;
};

struct insert_ev_poll_cq {
    __u64 wr_id;
    __u32 status;
    __u32 opcode;
    __u32 byte_len;
    __u32 imm_data;
    __u32 qp_num;
    __u32 src_qp;
    __u32 wc_flags;
    __u16 index;  /* position in this poll's batch */
    __u16 polled; /* what poll_cq returned (completions in the batch) */
};

struct insert_trace_event {
    __u64 ts_ns;     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
    __u64 cgroup_id; /* cgroup v2 id of the calling task */
    __u32 pid;       /* tgid */
    __u32 tid;
    char comm[16];
    __u32 kind; /* enum insert_trace_kind */
    __s32 ret;  /* int return value where the verb has one, else 0 */
    __u64 ctx;  /* struct ibv_context * the object belongs to (0 if unknown) */
    __u64 obj;  /* the object: qp, mr, pd, cq (or returned context for open_device) */
    union {
        struct insert_ev_open_device open_device;
        struct insert_ev_query_gid query_gid;
        struct insert_ev_create_cq create_cq;
        struct insert_ev_create_qp create_qp;
        struct insert_ev_modify_qp modify_qp;
        struct insert_ev_destroy_qp destroy_qp;
        struct insert_ev_mr mr;
        struct insert_ev_post_send post_send;
        struct insert_ev_post_recv post_recv;
        struct insert_ev_poll_cq poll_cq;
    } u;
};

/* A data-path record: the leading fields are those of insert_trace_event (the same names and
 * offsets; user space checks), then up to INSERT_MAX_BATCH items. Entry probes: one call's
 * work requests (sv_trace_send_wr / sv_trace_recv_wr, filled from the application's
 * ibv_send_wr / ibv_recv_wr) or completions (struct ibv_wc as the provider wrote it,
 * IBV_WC_SIZE bytes each). softverbs' site (INSERT_EV_SV_FLUSH_BATCH): sv_trace_rec as
 * softverbs wrote them; tid and comm are those of the thread that made them, ts_ns is the
 * flush's time, and ctx, obj, qp_num, first_index, polled are unused (each record has its
 * own). */
struct insert_trace_batch {
    __u64 ts_ns;
    __u64 cgroup_id;
    __u32 pid;
    __u32 tid;
    char comm[16];
    __u32 kind; /* INSERT_EV_*_BATCH */
    __s32 ret;
    __u64 ctx;
    __u64 obj; /* qp (post_send, post_recv) or cq (poll_cq) */
    __u32 qp_num;
    __u16 n;           /* items in this record */
    __u16 first_index; /* chain position (poll position) of items[0] */
    __u32 polled;      /* poll_cq: what the call returned */
    __u16 truncated;   /* 1: the chain went on beyond the last item (entry probes only) */
    __u16 pad;
    union {
        struct sv_trace_send_wr send[INSERT_MAX_BATCH];
        struct sv_trace_recv_wr recv[INSERT_MAX_BATCH];
        __u8 wc[INSERT_MAX_BATCH][IBV_WC_SIZE];
        struct sv_trace_rec rec[INSERT_MAX_BATCH];
    } items;
};

/* Index of the counters in the per-CPU `counters` array map. */
enum insert_trace_counter {
    INSERT_CNT_RINGBUF_DROPS = 0, /* event lost: ring buffer full */
    INSERT_CNT_READ_ERRORS = 1,   /* bpf_probe_read_user failed (bad pointer, paged out) */
    INSERT_CNT_SAMPLED_OUT = 2,   /* data-path call skipped by --datapath sample:N */
    INSERT_CNT_MAX = 3,
};

#endif
