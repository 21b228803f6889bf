// The data-path verbs that verbs.h's inline functions reach through context->ops, and the
// ops tables themselves.
//
// Probe sites: every data-path entry point starts with a 5-byte NOP (0f 1f 44 00 00) at its
// symbol address. A uprobe on that instruction is optimised by recent kernels into a call
// (~0.5 us) instead of a breakpoint trap (~11 us), which is what insert-trace needs to
// trace post/poll at line rate (docs/insert-trace.md, "Cost model"). GCC's
// -fpatchable-function-entry emits five one-byte NOPs instead, which the kernel does not
// optimise, so the entries are written as tiny assembly trampolines that jump to the C++
// implementations.
//
// Trace records (trace_buffer.hpp): while insert-trace probes the trace site, every accepted
// work request and every returned completion is written to the calling thread's ring, and
// the site is called once per 16 records. insert-trace probes it instead of the entries
// above: an empty poll then costs the tracer nothing, a poll needs no return probe, and a
// message (post + completion) costs an eighth of a probe hit.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/engine.hpp"
#include "hosttrace/softverbs/ops.hpp"
#include "hosttrace/softverbs/protocol.hpp"
#include "hosttrace/softverbs/trace_buffer.hpp"
#include "hosttrace/softverbs/trace_sites.h"

#define SV_PROBE_SITE(name)                    \
    asm(".pushsection .text\n"                 \
        ".p2align 4\n"                         \
        ".globl " #name                        \
        "\n"                                   \
        ".hidden " #name                       \
        "\n"                                   \
        ".type " #name ", @function\n" #name   \
        ":\n"                                  \
        ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" \
        "jmp " #name                           \
        "_impl\n"                              \
        ".size " #name ", .-" #name            \
        "\n"                                   \
        ".popsection\n")

SV_PROBE_SITE(softverbs_post_send);
SV_PROBE_SITE(softverbs_post_recv);
SV_PROBE_SITE(softverbs_post_srq_recv);
SV_PROBE_SITE(softverbs_poll_cq);
SV_PROBE_SITE(softverbs_req_notify_cq);

#define SV_HIDDEN extern "C" __attribute__((visibility("hidden")))

static_assert(sizeof(ibv_wc) == SV_TRACE_WC_SIZE);

SV_HIDDEN int softverbs_post_send(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
SV_HIDDEN int softverbs_post_recv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
SV_HIDDEN int softverbs_post_srq_recv(ibv_srq*, ibv_recv_wr*, ibv_recv_wr**);
SV_HIDDEN int softverbs_poll_cq(ibv_cq*, int, ibv_wc*);
SV_HIDDEN int softverbs_req_notify_cq(ibv_cq*, int);

namespace insert::softverbs {

namespace {

bool supported_opcode(const Qp& qp, ibv_wr_opcode op) {
    if (qp.type == IBV_QPT_UD) return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
    if (qp.type == IBV_QPT_UC)
        return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
               op == IBV_WR_RDMA_WRITE_WITH_IMM;
    switch (op) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
        case IBV_WR_SEND_WITH_INV:
            return true;
        default:
            return false;
    }
}

// Validates one work request and copies it into the send queue; returns 0 or an errno.
int queue_send(Qp& qp, const ibv_send_wr& wr) {
    if (!supported_opcode(qp, wr.opcode) || wr.num_sge < 0 ||
        static_cast<uint32_t>(wr.num_sge) > qp.cap.max_send_sge)
        return EINVAL;
    uint64_t length = 0;
    for (int i = 0; i < wr.num_sge; ++i) length += wr.sg_list[i].length;
    const bool is_inline =
        (wr.send_flags & IBV_SEND_INLINE) != 0 && wr.opcode != IBV_WR_RDMA_READ &&
        wr.opcode != IBV_WR_ATOMIC_CMP_AND_SWP && wr.opcode != IBV_WR_ATOMIC_FETCH_AND_ADD;
    if (is_inline && length > std::max<uint32_t>(qp.cap.max_inline_data, 0)) return EINVAL;
    if (length > (1ull << 31)) return EINVAL;
    if ((wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
        (wr.num_sge != 1 || wr.sg_list[0].length < 8))
        return EINVAL;
    if (qp.type == IBV_QPT_UD && (!wr.wr.ud.ah || length > qp.mtu)) return EINVAL;
    SendWqe* w = qp.sq.push();
    if (!w) return ENOMEM;
    w->wr_id = wr.wr_id;
    w->opcode = wr.opcode;
    w->flags = wr.send_flags;
    w->imm = wr.imm_data;
    w->invalidate_rkey = wr.opcode == IBV_WR_SEND_WITH_INV ? wr.invalidate_rkey : 0;
    w->length = static_cast<uint32_t>(length);
    w->started = false;
    w->done = false;
    w->read_pkts_done = 0;
    w->is_inline = is_inline;
    w->num_sge = is_inline ? 0 : static_cast<uint32_t>(wr.num_sge);
    if (is_inline) {
        uint32_t off = 0;
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(w->inline_data.data() + off,
                        reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
            off += wr.sg_list[i].length;
        }
    } else {
        std::copy(wr.sg_list, wr.sg_list + wr.num_sge, w->sge.begin());
    }
    switch (wr.opcode) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_RDMA_READ:
            w->remote_addr = wr.wr.rdma.remote_addr;
            w->rkey = wr.wr.rdma.rkey;
            break;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            w->remote_addr = wr.wr.atomic.remote_addr;
            w->rkey = wr.wr.atomic.rkey;
            w->compare_add = wr.wr.atomic.compare_add;
            w->swap = wr.wr.atomic.swap;
            w->length = 8;
            break;
        default:
            break;
    }
    if (qp.type == IBV_QPT_UD) {
        w->ud_ipv4 = to_ah(wr.wr.ud.ah)->ipv4;
        w->ud_qpn = wr.wr.ud.remote_qpn;
        w->ud_qkey = wr.wr.ud.remote_qkey;
    }
    return 0;
}

bool can_post_send(const Qp& qp) {
    return qp.state == IBV_QPS_RTS || qp.state == IBV_QPS_SQD || qp.state == IBV_QPS_ERR;
}

}  // namespace

namespace {

uint32_t sge_sum(const ibv_sge* sg, int num_sge) {
    uint32_t total = 0;
    for (int i = 0; i < num_sge; ++i) total += sg[i].length;
    return total;
}

// Records the accepted work requests [first, end) in the calling thread's trace ring, all
// with the time the post began (`now`). Called outside the context lock: a traced call then
// never lengthens the time the progress thread waits for the lock.
void trace_posted_sends(Qp& qp, const ibv_send_wr* first, const ibv_send_wr* end, uint64_t now) {
    TraceRing* const owned = trace_ring();
    if (!owned) return;  // no memory for this thread's ring: not traced
    TraceRing& ring = *owned;
    ibv_qp* handle = &qp.qpx.qp_base;
    uint16_t index = 0;
    for (const ibv_send_wr* w = first; w && w != end; w = w->next) {
        sv_trace_rec& rec = trace_record(ring, now, handle->context, handle, handle->qp_num,
                                         SV_TRACE_REC_SEND, index++, 0);
        sv_trace_send_wr& r = rec.u.send;
        r = {};
        r.wr_id = w->wr_id;
        r.length = sge_sum(w->sg_list, w->num_sge);
        r.imm_data = w->imm_data;
        r.send_flags = w->send_flags;
        r.opcode = static_cast<uint16_t>(w->opcode);
        r.num_sge = static_cast<uint16_t>(w->num_sge);
        if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
            r.remote_addr = w->wr.atomic.remote_addr;
            r.rkey = w->wr.atomic.rkey;
        } else if (qp.type == IBV_QPT_UD) {
            r.remote_qpn = w->wr.ud.remote_qpn;
        } else if (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                   w->opcode == IBV_WR_RDMA_READ) {
            r.remote_addr = w->wr.rdma.remote_addr;
            r.rkey = w->wr.rdma.rkey;
        }
        ring.publish();
    }
    trace_commit(ring);
}

}  // namespace

int post_send_list(Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    // The post's time is taken before its work is queued: once the lock is released, the
    // progress thread may transmit it while this thread waits to run again, and a time taken
    // then put the post after its own packets on the wire (by 371 us once, on a busy VM).
    const bool traced = trace_enabled();
    const uint64_t posted_ns = traced ? trace_now_ns() : 0;
    int rc = 0;
    ibv_send_wr* const first = wr;
    {
        std::lock_guard guard(qp.ctx->lock);
        if (!can_post_send(qp)) {
            *bad = wr;
            return EINVAL;
        }
        for (; wr; wr = wr->next) {
            rc = queue_send(qp, *wr);
            if (rc) {
                *bad = wr;
                break;
            }
        }
        // Work posted to a QP in error completes at once with a flush status.
        if (qp.state == IBV_QPS_ERR) flush_queues(qp);
    }
    if (first != wr && traced) trace_posted_sends(qp, first, wr, posted_ns);
    // Transmit now on the caller's thread when the engine is idle, like a doorbell write;
    // otherwise the running iteration or the woken thread picks the work up.
    if (!qp.ctx->engine->progress()) qp.ctx->engine->kick();
    return rc;
}

namespace {

// Records the accepted receive requests [first, end) in the calling thread's trace ring,
// with the time the post began (as sends: a receive may be consumed before this runs).
void trace_posted_recvs(ibv_qp* handle, const ibv_recv_wr* first, const ibv_recv_wr* end,
                        uint64_t now) {
    TraceRing* const owned = trace_ring();
    if (!owned) return;  // no memory for this thread's ring: not traced
    TraceRing& ring = *owned;
    uint16_t index = 0;
    for (const ibv_recv_wr* w = first; w && w != end; w = w->next) {
        sv_trace_rec& rec = trace_record(ring, now, handle->context, handle, handle->qp_num,
                                         SV_TRACE_REC_RECV, index++, 0);
        rec.u.recv = {w->wr_id, sge_sum(w->sg_list, w->num_sge), static_cast<uint32_t>(w->num_sge)};
        ring.publish();
    }
    trace_commit(ring);
}

int post_recv_to(Context& ctx, Ring<RecvWqe>& rq, uint32_t max_sge, ibv_recv_wr* wr,
                 ibv_recv_wr** bad) {
    std::lock_guard guard(ctx.lock);
    for (; wr; wr = wr->next) {
        if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > max_sge) {
            *bad = wr;
            return EINVAL;
        }
        RecvWqe* r = rq.push();
        if (!r) {
            *bad = wr;
            return ENOMEM;
        }
        r->wr_id = wr->wr_id;
        r->num_sge = static_cast<uint32_t>(wr->num_sge);
        std::copy(wr->sg_list, wr->sg_list + wr->num_sge, r->sge.begin());
    }
    return 0;
}

}  // namespace

void fill_ops(Context& ctx) {
    ibv_context_ops& ops = ctx.vctx.context.ops;
    ops._compat_query_device = sv_query_device;
    ops.post_send = softverbs_post_send;
    ops.post_recv = softverbs_post_recv;
    ops.post_srq_recv = softverbs_post_srq_recv;
    ops.poll_cq = softverbs_poll_cq;
    ops.req_notify_cq = softverbs_req_notify_cq;
    verbs_context& v = ctx.vctx;
    v.query_port = sv_query_port;
    v.query_device_ex = sv_query_device_ex;
    v.create_qp_ex = sv_create_qp_ex;
}

}  // namespace insert::softverbs

using namespace insert::softverbs;

SV_HIDDEN int softverbs_post_send_impl(ibv_qp* handle, ibv_send_wr* wr, ibv_send_wr** bad) {
    return post_send_list(*to_qp(handle), wr, bad);
}

SV_HIDDEN int softverbs_post_recv_impl(ibv_qp* handle, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    Qp& qp = *to_qp(handle);
    if (qp.srq || qp.state == IBV_QPS_RESET) {
        *bad = wr;
        return EINVAL;
    }
    const bool traced = trace_enabled();
    const uint64_t posted_ns = traced ? trace_now_ns() : 0;
    const int rc = post_recv_to(*qp.ctx, qp.rq, qp.cap.max_recv_sge, wr, bad);
    if (traced) trace_posted_recvs(handle, wr, rc ? *bad : nullptr, posted_ns);
    if (qp.state == IBV_QPS_ERR) {
        std::lock_guard guard(qp.ctx->lock);
        flush_queues(qp);
    }
    return rc;
}

SV_HIDDEN int softverbs_post_srq_recv_impl(ibv_srq* handle, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    Srq& srq = *to_srq(handle);
    return post_recv_to(*to_ctx(handle->context), srq.rq, srq.max_sge, wr, bad);
}

namespace {

int pop_completions(Cq& cq, int n, ibv_wc* wc) {
    std::lock_guard guard(cq.lock);
    int i = 0;
    for (; i < n && !cq.entries.empty(); ++i) {
        wc[i] = cq.entries.front();
        cq.entries.pop();
    }
    return i;
}

}  // namespace

namespace {

// Records a poll's completions in the calling thread's trace ring: only non-empty polls
// get here, so a busy-polling application's empty polls cost the tracer nothing.
int trace_polled(ibv_cq* handle, const ibv_wc* wc, int got) {
    if (!trace_enabled()) return got;
    TraceRing* const owned = trace_ring();
    if (!owned) return got;  // no memory for this thread's ring: not traced
    TraceRing& ring = *owned;
    const uint64_t now = trace_now_ns();
    for (int i = 0; i < got; i++) {
        sv_trace_rec& rec = trace_record(ring, now, handle->context, handle, 0, SV_TRACE_REC_WC,
                                         static_cast<uint16_t>(i), static_cast<uint32_t>(got));
        std::memcpy(rec.u.wc, &wc[i], sizeof(ibv_wc));
        ring.publish();
    }
    trace_commit(ring);
    return got;
}

}  // namespace

SV_HIDDEN int softverbs_poll_cq_impl(ibv_cq* handle, int n, ibv_wc* wc) {
    Cq& cq = *to_cq(handle);
    const int got = pop_completions(cq, n, wc);
    if (got > 0) return trace_polled(handle, wc, got);
    // An empty poll drives the engine: busy-polling applications then need no thread
    // switch per completion.
    to_ctx(handle->context)->engine->progress();
    const int again = pop_completions(cq, n, wc);
    return again > 0 ? trace_polled(handle, wc, again) : again;
}

SV_HIDDEN int softverbs_req_notify_cq_impl(ibv_cq* handle, int) {
    Cq& cq = *to_cq(handle);
    // Solicited-only requests are treated as "any completion": a superset that never
    // loses a wake-up.
    std::lock_guard guard(cq.lock);
    cq.armed = true;
    return 0;
}
