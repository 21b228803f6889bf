// Queue pair life cycle: create, the RESET->INIT->RTR->RTS state machine with the
// attributes each transition takes, query and destroy.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "dataplane/proto/psn.hpp"
#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/engine.hpp"
#include "hosttrace/softverbs/export.hpp"
#include "hosttrace/softverbs/ops.hpp"
#include "hosttrace/softverbs/protocol.hpp"
#include "hosttrace/softverbs/socket.hpp"
#include "hosttrace/softverbs/trace_buffer.hpp"

namespace insert::softverbs {

namespace {

constexpr uint64_t kSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                              IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                              IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                              IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;

bool valid_caps(const ibv_qp_cap& cap, bool has_srq) {
    return cap.max_send_wr <= kMaxQpWr && cap.max_send_sge <= kMaxSendSge &&
           cap.max_inline_data <= kMaxInline &&
           (has_srq || (cap.max_recv_wr <= kMaxQpWr && cap.max_recv_sge <= kMaxRecvSge));
}

uint32_t gid_ipv4(const ibv_gid& gid) {
    const uint8_t* g = gid.raw;
    return (uint32_t{g[12]} << 24) | (uint32_t{g[13]} << 16) | (uint32_t{g[14]} << 8) | g[15];
}

// SOFTVERBS_SPORT=per_qp: a send-only socket per QP whose source port is derived from the
// QPN, as mlx5 spreads flows over ECMP paths.
void open_per_qp_socket(Qp& qp) {
    const uint32_t ip = qp.ctx->device->ipv4;
    std::string error;
    uint16_t port = static_cast<uint16_t>(0xC000 | (qp_num(qp) & 0x3FFF));
    int fd = open_roce_socket(ip, port, false, error);
    if (fd < 0) {
        fd = open_roce_socket(ip, 0, false, error);
        if (fd < 0) return;  // stays on the shared socket: symmetric port
        sockaddr_in a{};
        socklen_t len = sizeof(a);
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
        port = ntohs(a.sin_port);
    }
    qp.tx_fd = fd;
    qp.src_port = port;
}

void reset_qp(Qp& qp) {
    qp.sq.clear();
    qp.rq.clear();
    qp.reads.clear();
    qp.send_next = 0;
    qp.send_pkt = 0;
    qp.deadline_ns = 0;
    qp.resume_ns = 0;
    qp.retries = 0;
    qp.rnr_retries = 0;
    qp.in = InboundMessage{};
    qp.nak_sent = false;
    qp.ack_pending = false;
    qp.msn = 0;
    for (AtomicReplay& r : qp.atomic_replay) r.valid = false;
}

bool transition_allowed(ibv_qp_state from, ibv_qp_state to) {
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return true;
    switch (from) {
        case IBV_QPS_RESET:
            return to == IBV_QPS_INIT;
        case IBV_QPS_INIT:
            return to == IBV_QPS_INIT || to == IBV_QPS_RTR;
        case IBV_QPS_RTR:
            return to == IBV_QPS_RTS;
        case IBV_QPS_RTS:
            return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
        case IBV_QPS_SQD:
            return to == IBV_QPS_RTS || to == IBV_QPS_SQD;
        default:
            return false;
    }
}

}  // namespace

ibv_qp* sv_create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
    Context& ctx = *to_ctx(context);
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || !attr->send_cq || !attr->recv_cq ||
        (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
         attr->qp_type != IBV_QPT_UD) ||
        !valid_caps(attr->cap, attr->srq != nullptr) ||
        ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
         (attr->send_ops_flags & ~kSendOps))) {
        errno = attr->qp_type == IBV_QPT_RC || attr->qp_type == IBV_QPT_UC ||
                        attr->qp_type == IBV_QPT_UD
                    ? EINVAL
                    : EOPNOTSUPP;
        return nullptr;
    }
    auto* qp = new (std::nothrow) Qp;
    if (!qp) {
        errno = ENOMEM;
        return nullptr;
    }
    qp->ctx = &ctx;
    qp->pd = to_pd(attr->pd);
    qp->send_cq = to_cq(attr->send_cq);
    qp->recv_cq = to_cq(attr->recv_cq);
    qp->srq = attr->srq ? to_srq(attr->srq) : nullptr;
    qp->type = attr->qp_type;
    qp->sq_sig_all = attr->sq_sig_all != 0;
    qp->cap = attr->cap;
    qp->cap.max_send_wr = std::max<uint32_t>(attr->cap.max_send_wr, 1);
    qp->cap.max_send_sge = std::max<uint32_t>(attr->cap.max_send_sge, 1);
    if (!qp->srq) {
        qp->cap.max_recv_wr = std::max<uint32_t>(attr->cap.max_recv_wr, 1);
        qp->cap.max_recv_sge = std::max<uint32_t>(attr->cap.max_recv_sge, 1);
    }
    qp->sq.reset(qp->cap.max_send_wr);
    qp->rq.reset(qp->srq ? 0 : qp->cap.max_recv_wr);
    qp->reads.reset(2 * kMaxRdAtomic);
    ibv_qp& base = qp->qpx.qp_base;
    base.context = context;
    base.qp_context = attr->qp_context;
    base.pd = attr->pd;
    base.send_cq = attr->send_cq;
    base.recv_cq = attr->recv_cq;
    base.srq = attr->srq;
    base.qp_type = attr->qp_type;
    base.state = IBV_QPS_RESET;
    pthread_mutex_init(&base.mutex, nullptr);
    pthread_cond_init(&base.cond, nullptr);
    qp->qpx.comp_mask = 0;
    fill_qp_ex_ops(qp->qpx);
    {
        std::lock_guard guard(ctx.lock);
        uint32_t slot = kMaxQps;
        for (uint32_t i = 0; i < kMaxQps; ++i)
            if (!ctx.qps[i]) {
                slot = i;
                break;
            }
        if (slot == kMaxQps) {
            delete qp;
            errno = ENOMEM;
            return nullptr;
        }
        base.qp_num = (ctx.qpn_base + slot) & insert::proto::kPsnMask;
        base.handle = slot;
        ctx.qps[slot] = qp;
        ctx.live_qps.push_back(qp);
    }
    attr->cap = qp->cap;
    return &base;
}

}  // namespace insert::softverbs

using namespace insert::softverbs;

SV_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    ibv_qp_init_attr_ex ex{};
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = sv_create_qp_ex(pd->context, &ex);
    if (qp) attr->cap = ex.cap;
    return qp;
}

SV_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
    return &to_qp(qp)->qpx;
}

SV_EXPORT int ibv_modify_qp(ibv_qp* handle, ibv_qp_attr* attr, int mask) {
    Qp& qp = *to_qp(handle);
    Context& ctx = *qp.ctx;
    bool open_socket = false;
    {
        std::lock_guard guard(ctx.lock);
        const ibv_qp_state from = (mask & IBV_QP_CUR_STATE) ? attr->cur_qp_state : qp.state;
        const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : qp.state;
        if ((mask & IBV_QP_STATE) && !transition_allowed(from, to)) return EINVAL;
        if (to == IBV_QPS_RTR && from == IBV_QPS_INIT && qp.type != IBV_QPT_UD) {
            constexpr int kRequired = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
            if ((mask & kRequired) != kRequired) return EINVAL;
        }
        if (mask & IBV_QP_PKEY_INDEX) {
            if (attr->pkey_index != 0) return EINVAL;
            qp.pkey_index = attr->pkey_index;
        }
        if ((mask & IBV_QP_PORT) && attr->port_num != 1) return EINVAL;
        if (mask & IBV_QP_ACCESS_FLAGS) qp.access = attr->qp_access_flags;
        if (mask & IBV_QP_QKEY) qp.qkey = attr->qkey;
        if (mask & IBV_QP_AV) {
            if (!attr->ah_attr.is_global) return EINVAL;  // RoCE needs a GRH (the GID)
            qp.ah_attr = attr->ah_attr;
            qp.remote_ipv4 = gid_ipv4(attr->ah_attr.grh.dgid);
        }
        if (mask & IBV_QP_PATH_MTU) {
            // A path MTU beyond the port's would make packets the link cannot carry.
            qp.path_mtu = std::min(attr->path_mtu, active_mtu(*ctx.device));
            qp.mtu = mtu_bytes(qp.path_mtu);
        }
        if (mask & IBV_QP_DEST_QPN) qp.dest_qpn = attr->dest_qp_num & insert::proto::kPsnMask;
        if (mask & IBV_QP_RQ_PSN) qp.rq_psn = attr->rq_psn & insert::proto::kPsnMask;
        if (mask & IBV_QP_SQ_PSN) qp.sq_psn = attr->sq_psn & insert::proto::kPsnMask;
        if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
            if (attr->max_dest_rd_atomic > kMaxRdAtomic) return EINVAL;
            qp.max_dest_rd_atomic = attr->max_dest_rd_atomic;
        }
        if (mask & IBV_QP_MAX_QP_RD_ATOMIC) {
            if (attr->max_rd_atomic > kMaxRdAtomic) return EINVAL;
            qp.max_rd_atomic = std::max<uint8_t>(attr->max_rd_atomic, 1);
        }
        if (mask & IBV_QP_MIN_RNR_TIMER) qp.min_rnr_timer = attr->min_rnr_timer;
        if (mask & IBV_QP_TIMEOUT) qp.timeout = attr->timeout;
        if (mask & IBV_QP_RETRY_CNT) qp.retry_cnt = attr->retry_cnt;
        if (mask & IBV_QP_RNR_RETRY) qp.rnr_retry = attr->rnr_retry;
        if (mask & IBV_QP_STATE) {
            if (to == IBV_QPS_ERR) {
                qp_enter_error(qp);
            } else {
                if (to == IBV_QPS_RESET) reset_qp(qp);
                if (to == IBV_QPS_RTR && from != IBV_QPS_RTR) {
                    qp.epsn = qp.rq_psn;
                    if (qp.type == IBV_QPT_UD) qp.mtu = mtu_bytes(active_mtu(*ctx.device));
                    open_socket = ctx.config.sport == SourcePort::per_qp && qp.tx_fd < 0;
                }
                if (to == IBV_QPS_RTS && from == IBV_QPS_RTR) {
                    qp.psn_next = qp.sq_psn;
                    qp.psn_una = qp.sq_psn;
                }
                qp.state = to;
                handle->state = to;
            }
        }
        if (open_socket) open_per_qp_socket(qp);
    }
    ctx.engine->kick();
    return 0;
}

SV_EXPORT int ibv_query_qp(ibv_qp* handle, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
    Qp& qp = *to_qp(handle);
    std::lock_guard guard(qp.ctx->lock);
    std::memset(attr, 0, sizeof(*attr));
    attr->qp_state = qp.state;
    attr->cur_qp_state = qp.state;
    attr->path_mtu = qp.path_mtu;
    attr->qkey = qp.qkey;
    attr->rq_psn = qp.rq_psn;
    attr->sq_psn = qp.sq_psn;
    attr->dest_qp_num = qp.dest_qpn;
    attr->qp_access_flags = static_cast<int>(qp.access);
    attr->cap = qp.cap;
    attr->ah_attr = qp.ah_attr;
    attr->pkey_index = qp.pkey_index;
    attr->max_rd_atomic = qp.max_rd_atomic;
    attr->max_dest_rd_atomic = qp.max_dest_rd_atomic;
    attr->min_rnr_timer = qp.min_rnr_timer;
    attr->port_num = 1;
    attr->timeout = qp.timeout;
    attr->retry_cnt = qp.retry_cnt;
    attr->rnr_retry = qp.rnr_retry;
    if (init) {
        std::memset(init, 0, sizeof(*init));
        init->qp_context = handle->qp_context;
        init->send_cq = handle->send_cq;
        init->recv_cq = handle->recv_cq;
        init->srq = handle->srq;
        init->cap = qp.cap;
        init->qp_type = qp.type;
        init->sq_sig_all = qp.sq_sig_all;
    }
    return 0;
}

SV_EXPORT int ibv_destroy_qp(ibv_qp* handle) {
    // Trace records of this QP's work reach the tracer now rather than at the next flush
    // (they hold values, not references: flushing later would be correct too).
    if (trace_enabled()) trace_flush_all();
    Qp* qp = to_qp(handle);
    Context& ctx = *qp->ctx;
    {
        std::lock_guard guard(ctx.lock);
        ctx.qps[handle->handle] = nullptr;
        std::erase(ctx.live_qps, qp);
    }
    if (ctx.config.debug)
        std::fprintf(
            stderr,
            "softverbs QP 0x%06x: rewinds %lu timeouts %lu naks %lu cnps %lu psn_next 0x%06x "
            "una 0x%06x epsn 0x%06x\n",
            handle->qp_num, qp->retransmitted, qp->timeouts, qp->naks_received, qp->cnps_received,
            qp->psn_next, qp->psn_una, qp->epsn);
    if (qp->tx_fd >= 0) close(qp->tx_fd);
    pthread_mutex_destroy(&handle->mutex);
    pthread_cond_destroy(&handle->cond);
    delete qp;
    return 0;
}
