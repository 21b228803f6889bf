/* The probe site that softverbs offers insert-trace: an exported function that
 * does nothing (a 5-byte NOP and a ret) and is called with records of data-path verbs in
 * its arguments.
 *
 * Why: a uprobe hit costs ~0.5-1 us even on a NOP, so probing every post and every poll
 * (or one site per post and one per non-empty poll, SOFTVERBS_TRACE_1) costs two hits per
 * message. softverbs instead writes a record per accepted work request and per returned
 * completion into a per-thread ring in its own memory (plain stores and a vDSO clock read)
 * while the site is probed, and calls the site with up to SV_TRACE_MAX_BATCH records at a
 * time: one hit and one bpf_probe_read_user per 16 records. When the site is not probed
 * (its first byte is still the NOP's), nothing is recorded. When records are flushed, and
 * the bound on how long one waits: hosttrace/softverbs/trace_ring.hpp, docs/insert-trace.md.
 *
 * This header is the ABI between softverbs and the BPF program (which includes it after
 * vmlinux.h): fixed-width types only, layouts pinned below. A tracer detects the site by
 * the exported symbol of version SOFTVERBS_TRACE_2; an incompatible change must rename the
 * version and the symbol. */
#ifndef INSERT_SOFTVERBS_TRACE_SITES_H
#define INSERT_SOFTVERBS_TRACE_SITES_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* One site call reports at most this many records. */
#define SV_TRACE_MAX_BATCH 16

/* A send work request as softverbs accepted it: the fields of ibv_send_wr that the trace
 * reports, with the SGE lengths already summed (softverbs computes the sum to validate the
 * request; the tracer would otherwise have to read the SGE list a second time). Also the
 * item format of the tracer's entry probes on other providers. */
struct sv_trace_send_wr {
    __u64 wr_id;
    __u64 remote_addr; /* wr.rdma / wr.atomic, 0 for sends */
    __u32 length;      /* sum of the SGE lengths (softverbs refuses more than 2^31) */
    __u32 rkey;        /* wr.rdma.rkey / wr.atomic.rkey, 0 for sends */
    __u32 imm_data;    /* network byte order, as the application wrote it */
    __u32 remote_qpn;  /* wr.ud.remote_qpn (UD), else 0 */
    __u32 send_flags;
    __u16 opcode; /* enum ibv_wr_opcode */
    __u16 num_sge;
};

struct sv_trace_recv_wr {
    __u64 wr_id;
    __u32 length; /* sum of the SGE lengths */
    __u32 num_sge;
};

#define SV_TRACE_SEND_WR_SIZE 40
#define SV_TRACE_RECV_WR_SIZE 16
#define SV_TRACE_WC_SIZE 48 /* sizeof(struct ibv_wc) */

enum sv_trace_rec_kind {
    SV_TRACE_REC_SEND = 1, /* an accepted ibv_post_send work request */
    SV_TRACE_REC_RECV = 2, /* an accepted ibv_post_recv work request */
    SV_TRACE_REC_WC = 3,   /* a completion that ibv_poll_cq returned */
};

/* One data-path event. t_ns is CLOCK_MONOTONIC (clock_gettime, the vDSO: the clock of
 * bpf_ktime_get_ns) read when softverbs accepted the post or when the poll returned, not
 * when the record was flushed. */
struct sv_trace_rec {
    __u64 t_ns;
    __u64 ctx;      /* struct ibv_context * */
    __u64 obj;      /* struct ibv_qp * (posts) or struct ibv_cq * (completions) */
    __u32 qp_num;   /* posts: the QP's number (a completion carries its own in the wc) */
    __u16 kind;     /* enum sv_trace_rec_kind */
    __u16 index;    /* chain position (posts) or position in the poll's result */
    __u32 polled;   /* completions: what that ibv_poll_cq call returned */
    __u32 reserved; /* 0 */
    union {
        struct sv_trace_send_wr send;
        struct sv_trace_recv_wr recv;
        __u8 wc[SV_TRACE_WC_SIZE]; /* struct ibv_wc as returned to the application */
    } u;
};

#define SV_TRACE_REC_SIZE 88

/* The site (arguments in registers, System V x86-64 calling convention):
 *
 *   softverbs_trace_flush(const struct sv_trace_rec *recs, __u32 n, __u32 tid,
 *                         const char *comm)
 *
 * n is 1..SV_TRACE_MAX_BATCH records of one thread, oldest first. tid is that thread's id:
 * usually the caller, but a ring that waited too long is flushed by softverbs' flusher
 * thread (or at exit by the exiting thread), and then the records are another thread's.
 * comm (16 bytes) is that thread's name as it was when its ring was made: a tracer uses it
 * when tid is not the calling thread. */
#define SV_TRACE_SITE_FLUSH "softverbs_trace_flush"

#endif
