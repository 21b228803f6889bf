/* Probe sites that softverbs offers insert-trace (issue 7): exported functions that do
 * nothing, start with a 5-byte NOP and are called by the data path only when there is
 * something to report, with the report in their arguments.
 *
 * Why: probing the ops-table entries (softverbs_post_send, softverbs_poll_cq) costs a
 * uprobe hit on every call - including every empty poll of a busy-polling application -
 * plus a return probe on poll_cq, whose completions exist only after the return. These
 * sites are hit once per post (after the work requests were accepted) and once per
 * non-empty poll (after the completions were written), and hand the tracer one contiguous
 * array per hit, so the BPF program needs one bpf_probe_read_user per event.
 *
 * This header is the ABI between softverbs and the BPF program (which includes it after
 * vmlinux.h): fixed-width types only, layouts pinned below. A tracer detects the sites by
 * the exported symbols of version SOFTVERBS_TRACE_1; an incompatible change must rename
 * the version and the symbols. */
#ifndef INSERT_SOFTVERBS_TRACE_SITES_H
#define INSERT_SOFTVERBS_TRACE_SITES_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* One site call reports at most this many work requests or completions; longer lists are
 * reported in several calls (first_index says where each starts), never truncated. */
#define SV_TRACE_MAX_BATCH 16

/* A send work request as softverbs accepted it: the fields of ibv_send_wr that the trace
 * reports, with the SGE lengths already summed (softverbs computes the sum to validate the
 * request; the tracer would otherwise have to read the SGE list a second time). */
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

/* The sites (arguments in registers, System V x86-64 / AAPCS64 calling convention):
 *
 *   softverbs_trace_post_send(struct ibv_context *ctx, struct ibv_qp *qp, __u32 qp_num,
 *                             const struct sv_trace_send_wr *wrs, __u32 n, __u32 first_index)
 *   softverbs_trace_post_recv(struct ibv_context *ctx, struct ibv_qp *qp, __u32 qp_num,
 *                             const struct sv_trace_recv_wr *wrs, __u32 n, __u32 first_index)
 *   softverbs_trace_poll_cq(struct ibv_context *ctx, struct ibv_cq *cq,
 *                           const struct ibv_wc *wc, __u32 n, __u32 first_index,
 *                           __u32 polled)
 *
 * n is 1..SV_TRACE_MAX_BATCH; first_index is the position of wrs[0] in the application's
 * work-request chain (wc[0] in the poll's result); polled is what poll_cq returns. */
#define SV_TRACE_SITE_POST_SEND "softverbs_trace_post_send"
#define SV_TRACE_SITE_POST_RECV "softverbs_trace_post_recv"
#define SV_TRACE_SITE_POLL_CQ "softverbs_trace_poll_cq"

#endif
