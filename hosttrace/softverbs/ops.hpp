// The provider functions that verbs.h's inline wrappers reach through context->ops and
// the verbs_context extension table, filled exactly as an rdma-core provider fills them.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace insert::softverbs {

struct Context;
struct Device;

void fill_ops(Context& ctx);
uint64_t node_guid(const Device& d);
ibv_mtu active_mtu(const Device& d);

// Data path (datapath.cpp).
int sv_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
int sv_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int sv_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
int sv_poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
int sv_req_notify_cq(ibv_cq* cq, int solicited_only);

// Control path reached through the extension table.
int sv_query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t len);
int sv_query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                       ibv_device_attr_ex* attr, size_t len);
int sv_query_device(ibv_context* context, ibv_device_attr* attr);
ibv_qp* sv_create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);

// ibv_qp_ex work-request builders (qp_ex.cpp).
void fill_qp_ex_ops(ibv_qp_ex& qpx);

}  // namespace insert::softverbs
