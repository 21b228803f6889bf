// The BPF program reads libibverbs' structs through fixed offsets (verbs_trace.h) because
// <infiniband/verbs.h> cannot be compiled for the BPF target. This file fails the build
// when the installed headers disagree with any of those offsets.
#include <infiniband/verbs.h>

#include <cstddef>

#include "verbs_trace.h"

#define INSERT_CHECK_OFFSET(type, member, constant)                                          \
    static_assert(offsetof(type, member) == (constant),                                      \
                  "verbs_trace.h: " #constant " disagrees with offsetof(" #type ", " #member \
                  ") in <infiniband/verbs.h>")

INSERT_CHECK_OFFSET(ibv_context, device, IBV_CONTEXT_DEVICE);
INSERT_CHECK_OFFSET(ibv_context, ops, IBV_CONTEXT_OPS);
INSERT_CHECK_OFFSET(ibv_context_ops, poll_cq, IBV_OPS_POLL_CQ);
INSERT_CHECK_OFFSET(ibv_context_ops, post_send, IBV_OPS_POST_SEND);
INSERT_CHECK_OFFSET(ibv_context_ops, post_recv, IBV_OPS_POST_RECV);
INSERT_CHECK_OFFSET(ibv_device, name, IBV_DEVICE_NAME);
INSERT_CHECK_OFFSET(ibv_qp, context, IBV_QP_CONTEXT);
INSERT_CHECK_OFFSET(ibv_qp, pd, IBV_QP_PD);
INSERT_CHECK_OFFSET(ibv_qp, send_cq, IBV_QP_SEND_CQ);
INSERT_CHECK_OFFSET(ibv_qp, recv_cq, IBV_QP_RECV_CQ);
INSERT_CHECK_OFFSET(ibv_qp, qp_num, IBV_QP_QP_NUM);
INSERT_CHECK_OFFSET(ibv_qp, qp_type, IBV_QP_QP_TYPE);
INSERT_CHECK_OFFSET(ibv_pd, context, IBV_PD_CONTEXT);
INSERT_CHECK_OFFSET(ibv_cq, context, IBV_CQ_CONTEXT);
INSERT_CHECK_OFFSET(ibv_mr, context, IBV_MR_CONTEXT);
INSERT_CHECK_OFFSET(ibv_mr, addr, IBV_MR_ADDR);
INSERT_CHECK_OFFSET(ibv_mr, length, IBV_MR_LENGTH);
INSERT_CHECK_OFFSET(ibv_mr, lkey, IBV_MR_LKEY);
INSERT_CHECK_OFFSET(ibv_mr, rkey, IBV_MR_RKEY);
INSERT_CHECK_OFFSET(ibv_send_wr, wr_id, IBV_SEND_WR_WR_ID);
INSERT_CHECK_OFFSET(ibv_send_wr, next, IBV_SEND_WR_NEXT);
INSERT_CHECK_OFFSET(ibv_send_wr, sg_list, IBV_SEND_WR_SG_LIST);
INSERT_CHECK_OFFSET(ibv_send_wr, num_sge, IBV_SEND_WR_NUM_SGE);
INSERT_CHECK_OFFSET(ibv_send_wr, opcode, IBV_SEND_WR_OPCODE);
INSERT_CHECK_OFFSET(ibv_send_wr, send_flags, IBV_SEND_WR_SEND_FLAGS);
INSERT_CHECK_OFFSET(ibv_send_wr, imm_data, IBV_SEND_WR_IMM_DATA);
INSERT_CHECK_OFFSET(ibv_send_wr, wr.rdma.remote_addr, IBV_SEND_WR_REMOTE_ADDR);
INSERT_CHECK_OFFSET(ibv_send_wr, wr.atomic.remote_addr, IBV_SEND_WR_REMOTE_ADDR);
INSERT_CHECK_OFFSET(ibv_send_wr, wr.rdma.rkey, IBV_SEND_WR_RDMA_RKEY);
INSERT_CHECK_OFFSET(ibv_send_wr, wr.atomic.rkey, IBV_SEND_WR_ATOMIC_RKEY);
INSERT_CHECK_OFFSET(ibv_send_wr, wr.ud.remote_qpn, IBV_SEND_WR_UD_REMOTE_QPN);
INSERT_CHECK_OFFSET(ibv_recv_wr, wr_id, IBV_RECV_WR_WR_ID);
INSERT_CHECK_OFFSET(ibv_recv_wr, next, IBV_RECV_WR_NEXT);
INSERT_CHECK_OFFSET(ibv_recv_wr, sg_list, IBV_RECV_WR_SG_LIST);
INSERT_CHECK_OFFSET(ibv_recv_wr, num_sge, IBV_RECV_WR_NUM_SGE);
INSERT_CHECK_OFFSET(ibv_sge, length, IBV_SGE_LENGTH);
// The BPF side copies the first 40 bytes of each ibv_wc as a flat struct.
INSERT_CHECK_OFFSET(ibv_wc, wr_id, 0);
INSERT_CHECK_OFFSET(ibv_wc, status, 8);
INSERT_CHECK_OFFSET(ibv_wc, opcode, 12);
INSERT_CHECK_OFFSET(ibv_wc, vendor_err, 16);
INSERT_CHECK_OFFSET(ibv_wc, byte_len, 20);
INSERT_CHECK_OFFSET(ibv_wc, imm_data, 24);
INSERT_CHECK_OFFSET(ibv_wc, qp_num, 28);
INSERT_CHECK_OFFSET(ibv_wc, src_qp, 32);
INSERT_CHECK_OFFSET(ibv_wc, wc_flags, 36);

static_assert(sizeof(ibv_sge) == IBV_SGE_SIZE, "verbs_trace.h: IBV_SGE_SIZE");
static_assert(sizeof(ibv_wc) == IBV_WC_SIZE, "verbs_trace.h: IBV_WC_SIZE");
static_assert(sizeof(ibv_qp_attr) == INSERT_QP_ATTR_SIZE, "verbs_trace.h: INSERT_QP_ATTR_SIZE");
static_assert(IBV_WR_ATOMIC_CMP_AND_SWP == IBV_WR_ATOMIC_CMP_AND_SWP_VALUE);
static_assert(IBV_WR_ATOMIC_FETCH_AND_ADD == IBV_WR_ATOMIC_FETCH_AND_ADD_VALUE);
static_assert(sizeof(ibv_device::name) == INSERT_DEV_NAME_LEN);

// The event crosses the kernel/user boundary through the ring buffer: pin its layout.
static_assert(sizeof(insert_trace_event) == 216, "insert_trace_event layout changed");
static_assert(offsetof(insert_trace_event, kind) == 40);
static_assert(offsetof(insert_trace_event, u) == 64);
static_assert(sizeof(insert_ev_modify_qp) == 152);
static_assert(sizeof(insert_ev_post_send) == 56);
static_assert(sizeof(insert_ev_poll_cq) == 40);

// ibv_create_qp_ex() is inline: it calls verbs_context.create_qp_ex when the context is
// extended (abi_compat == __VERBS_ABI_IS_EXTENDED) and vctx->sz covers the field.
INSERT_CHECK_OFFSET(ibv_context, abi_compat, IBV_CONTEXT_ABI_COMPAT);
static_assert(static_cast<long>(offsetof(verbs_context, sz)) -
                  static_cast<long>(offsetof(verbs_context, context)) ==
              VERBS_CONTEXT_SZ_FROM_CONTEXT);
static_assert(static_cast<long>(offsetof(verbs_context, create_qp_ex)) -
                  static_cast<long>(offsetof(verbs_context, context)) ==
              VERBS_CONTEXT_CREATE_QP_EX_FROM_CONTEXT);
static_assert(sizeof(verbs_context) - offsetof(verbs_context, create_qp_ex) ==
              VERBS_CONTEXT_CREATE_QP_EX_MIN_SZ);
