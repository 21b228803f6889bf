// RC requester: PSN assignment, MTU segmentation, AckReq placement, the send window,
// go-back-N retransmission on NAK (sequence error), on a gap in READ responses and on
// timeout, RNR waits, and in-order completion of send work requests.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/psn.hpp"
#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/engine.hpp"
#include "hosttrace/softverbs/protocol.hpp"

namespace insert::softverbs {

namespace {

using proto::psn_add;
using proto::psn_newer;
using proto::psn_not_older;
using proto::psn_sub;

bool is_read_like(ibv_wr_opcode op) {
    return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
           op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

uint32_t last_psn(const SendWqe& w) {
    return psn_add(w.first_psn, w.npkts - 1);
}

bool psn_in(const SendWqe& w, uint32_t psn) {
    return psn_sub(psn, w.first_psn) < w.npkts;
}

ibv_wc_opcode wc_opcode(ibv_wr_opcode op) {
    switch (op) {
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            return IBV_WC_RDMA_WRITE;
        case IBV_WR_RDMA_READ:
            return IBV_WC_RDMA_READ;
        case IBV_WR_ATOMIC_CMP_AND_SWP:
            return IBV_WC_COMP_SWAP;
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            return IBV_WC_FETCH_ADD;
        default:
            return IBV_WC_SEND;
    }
}

void complete_send(Qp& qp, const SendWqe& w, ibv_wc_status status) {
    if (status == IBV_WC_SUCCESS && !qp.sq_sig_all && !(w.flags & IBV_SEND_SIGNALED)) return;
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.status = status;
    wc.opcode = wc_opcode(w.opcode);
    wc.qp_num = qp_num(qp);
    if (w.opcode == IBV_WR_RDMA_READ) wc.byte_len = w.length;
    if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
        wc.byte_len = 8;
    push_completion(*qp.send_cq, wc);
}

// Pops finished WQEs from the head of the send queue, in order.
void retire(Qp& qp) {
    while (!qp.sq.empty() && qp.send_next > 0 && qp.sq.front().done) {
        complete_send(qp, qp.sq.front(), IBV_WC_SUCCESS);
        qp.sq.pop();
        --qp.send_next;
    }
}

// Completes the oldest WQE with `status` and flushes the rest (IBTA: the QP enters Error).
void fail(Qp& qp, ibv_wc_status status) {
    if (!qp.sq.empty()) {
        complete_send(qp, qp.sq.front(), status);
        qp.sq.pop();
        if (qp.send_next > 0) --qp.send_next;
    }
    qp_enter_error(qp);
}

void arm_timer(Engine& e, Qp& qp) {
    qp.deadline_ns = qp.psn_una == qp.psn_next ? 0 : e.now_ns() + timeout_ns(qp.timeout);
}

void rewind(Qp& qp, uint32_t psn);

// Everything up to and including `psn` has been acknowledged, except READ/atomic requests,
// which complete only with their responses: an ACK beyond an unanswered READ means its
// responses were lost (the responder answers in order), so it is asked again.
void acknowledge(Engine& e, Qp& qp, uint32_t psn) {
    uint32_t next_una = psn_add(psn, 1);
    if (!psn_newer(next_una, qp.psn_una) || psn_newer(next_una, qp.psn_next)) return;
    bool reask = false;
    for (std::size_t i = 0; i < qp.send_next; ++i) {
        SendWqe& w = qp.sq.at(i);
        if (w.done) continue;
        if (is_read_like(w.opcode)) {
            const uint32_t expected = psn_add(w.first_psn, w.read_pkts_done);
            if (psn_newer(next_una, expected)) {
                next_una = expected;
                reask = !(qp.read_rewound && qp.read_rewind_psn == expected);
            }
            break;
        }
        if (!psn_not_older(psn, last_psn(w))) break;
        w.done = true;
    }
    if (psn_newer(next_una, qp.psn_una)) {
        qp.psn_una = next_una;
        qp.retries = 0;
    }
    if (reask) {
        rewind(qp, next_una);
        qp.read_rewound = true;
        qp.read_rewind_psn = next_una;
    }
    arm_timer(e, qp);
    retire(qp);
}

// Go-back-N: resend from `psn`, which must lie in an already sent WQE. Never before
// psn_una: what is acknowledged stays acknowledged.
void rewind(Qp& qp, uint32_t psn) {
    if (psn_newer(qp.psn_una, psn)) psn = qp.psn_una;
    const std::size_t limit = std::min<std::size_t>(qp.send_next + 1, qp.sq.size());
    for (std::size_t i = 0; i < limit; ++i) {
        SendWqe& w = qp.sq.at(i);
        if (!w.started || w.done) continue;
        if (!psn_in(w, psn)) continue;
        qp.send_next = i;
        qp.send_pkt = psn_sub(psn, w.first_psn);
        qp.psn_next = psn;
        ++qp.retransmitted;
        return;
    }
}

// Resolves lkeys to host pointers once, so packets are built without lookups.
bool prepare(Context& ctx, Qp& qp, SendWqe& w) {
    if (w.is_inline) return true;
    for (uint32_t i = 0; i < w.num_sge; ++i) {
        ibv_sge& s = w.sge[i];
        Mr* mr = find_mr_lkey(ctx, s.lkey, s.addr, s.length);
        if (!mr || mr->mr.pd != &qp.pd->pd) return false;
        s.addr = reinterpret_cast<uintptr_t>(mr_ptr(mr, s.addr));
    }
    return true;
}

// Payload bytes [off, off+len) of a WQE as host ranges.
Gather gather(const SendWqe& w, uint32_t off, uint32_t len) {
    Gather g;
    if (len == 0) return g;
    if (w.is_inline) {
        g.ranges[g.count++] = {w.inline_data.data() + off, len};
        return g;
    }
    for (uint32_t i = 0; i < w.num_sge && len > 0; ++i) {
        const ibv_sge& s = w.sge[i];
        if (off >= s.length) {
            off -= s.length;
            continue;
        }
        const uint32_t n = std::min(s.length - off, len);
        g.ranges[g.count++] = {reinterpret_cast<const uint8_t*>(s.addr) + off, n};
        len -= n;
        off = 0;
    }
    return g;
}

// READ responses land in the WQE's SGEs (already host pointers).
void scatter_local(SendWqe& w, uint32_t off, const uint8_t* src, uint32_t len) {
    for (uint32_t i = 0; i < w.num_sge && len > 0; ++i) {
        const ibv_sge& s = w.sge[i];
        if (off >= s.length) {
            off -= s.length;
            continue;
        }
        const uint32_t n = std::min(s.length - off, len);
        std::memcpy(reinterpret_cast<uint8_t*>(s.addr) + off, src, n);
        src += n;
        len -= n;
        off = 0;
    }
}

uint8_t send_opcode(const SendWqe& w, bool first, bool last) {
    using namespace proto::op;
    const bool imm = w.opcode == IBV_WR_SEND_WITH_IMM || w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    const bool inv = w.opcode == IBV_WR_SEND_WITH_INV;
    if (w.opcode == IBV_WR_RDMA_WRITE || w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        if (first && last) return imm ? kWriteOnlyImm : kWriteOnly;
        if (first) return kWriteFirst;
        if (last) return imm ? kWriteLastImm : kWriteLast;
        return kWriteMiddle;
    }
    if (first && last) return imm ? kSendOnlyImm : inv ? kSendOnlyInv : kSendOnly;
    if (first) return kSendFirst;
    if (last) return imm ? kSendLastImm : inv ? kSendLastInv : kSendLast;
    return kSendMiddle;
}

uint32_t outstanding_reads(Qp& qp) {
    uint32_t n = 0;
    for (std::size_t i = 0; i < qp.send_next; ++i) {
        const SendWqe& w = qp.sq.at(i);
        if (!w.done && is_read_like(w.opcode)) ++n;
    }
    return n;
}

bool transmit_ud(Engine& e, Qp& qp) {
    uint32_t budget = kBatch;
    while (budget-- > 0 && !qp.sq.empty()) {
        SendWqe& w = qp.sq.front();
        if (!prepare(*qp.ctx, qp, w)) {
            fail(qp, IBV_WC_LOC_PROT_ERR);
            return false;
        }
        proto::TransportHeaders t;
        t.bth.opcode =
            w.opcode == IBV_WR_SEND_WITH_IMM ? proto::op::kUdSendOnlyImm : proto::op::kUdSendOnly;
        t.bth.dest_qp = w.ud_qpn;
        t.bth.psn = qp.psn_next;
        t.bth.se = (w.flags & IBV_SEND_SOLICITED) != 0;
        // A Q_Key with the high bit set means "use the QP's own" (IBTA 10.2.5).
        t.deth.qkey = (w.ud_qkey & 0x80000000u) ? qp.qkey : w.ud_qkey;
        t.deth.src_qp = qp_num(qp);
        t.imm = __builtin_bswap32(w.imm);
        e.emit(qp, w.ud_ipv4, t, gather(w, 0, w.length));
        qp.psn_next = psn_add(qp.psn_next, 1);
        complete_send(qp, w, IBV_WC_SUCCESS);
        qp.sq.pop();
    }
    return !qp.sq.empty();
}

}  // namespace

bool requester_transmit(Engine& e, Qp& qp) {
    if (qp.state != IBV_QPS_RTS || qp.sq.empty()) return false;
    if (qp.type == IBV_QPT_UD) return transmit_ud(e, qp);
    if (qp.resume_ns) {
        if (e.now_ns() < qp.resume_ns) return false;
        qp.resume_ns = 0;
    }
    uint32_t budget = 2 * kBatch;
    while (budget > 0 && qp.send_next < qp.sq.size()) {
        if (psn_sub(qp.psn_next, qp.psn_una) >= kMaxInflightPkts) return false;
        SendWqe& w = qp.sq.at(qp.send_next);
        if (!w.started) {
            if (!prepare(*qp.ctx, qp, w)) {
                // Everything before it must still complete normally; fail it once it is
                // the oldest.
                if (qp.send_next == 0) fail(qp, IBV_WC_LOC_PROT_ERR);
                return false;
            }
            w.started = true;
            w.done = false;
            w.first_psn = qp.psn_next;
            w.read_pkts_done = 0;
            w.npkts = is_read_like(w.opcode) && w.opcode != IBV_WR_RDMA_READ
                          ? 1
                          : std::max<uint32_t>(1, (w.length + qp.mtu - 1) / qp.mtu);
            if (is_read_like(w.opcode) && outstanding_reads(qp) >= qp.max_rd_atomic) {
                w.started = false;
                return false;
            }
        }
        const uint32_t k = qp.send_pkt;
        const uint32_t psn = psn_add(w.first_psn, k);
        proto::TransportHeaders t;
        t.bth.dest_qp = qp.dest_qpn;
        t.bth.psn = psn;
        t.bth.se = (w.flags & IBV_SEND_SOLICITED) != 0;
        Gather payload;
        uint32_t next_psn;
        switch (w.opcode) {
            case IBV_WR_RDMA_READ: {
                const uint32_t off = k * qp.mtu;
                t.bth.opcode = proto::op::kReadRequest;
                t.bth.ack_req = true;
                t.reth.va = w.remote_addr + off;
                t.reth.rkey = w.rkey;
                t.reth.dma_len = w.length - std::min(off, w.length);
                next_psn = psn_add(w.first_psn, w.npkts);
                qp.send_pkt = w.npkts;
                break;
            }
            case IBV_WR_ATOMIC_CMP_AND_SWP:
            case IBV_WR_ATOMIC_FETCH_AND_ADD:
                t.bth.opcode = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? proto::op::kCmpSwap
                                                                     : proto::op::kFetchAdd;
                t.bth.ack_req = true;
                t.atomic.va = w.remote_addr;
                t.atomic.rkey = w.rkey;
                t.atomic.swap_add = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w.swap : w.compare_add;
                t.atomic.compare = w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w.compare_add : 0;
                next_psn = psn_add(psn, 1);
                qp.send_pkt = 1;
                break;
            default: {
                const uint32_t off = k * qp.mtu;
                const uint32_t len = std::min(qp.mtu, w.length - std::min(off, w.length));
                const bool first = k == 0;
                const bool last = k + 1 == w.npkts;
                t.bth.opcode = send_opcode(w, first, last);
                if (qp.type == IBV_QPT_UC) t.bth.opcode |= proto::op::kUcBase;
                t.bth.se = last && (w.flags & IBV_SEND_SOLICITED) != 0;
                // AckReq on the last packet, periodically inside long messages, and when the
                // window is about to close, so the responder's coalesced ACKs keep it open.
                t.bth.ack_req = qp.type == IBV_QPT_RC &&
                                (last || (psn % kAckReqEvery) == 0 ||
                                 psn_sub(qp.psn_next, qp.psn_una) + 1 >= kMaxInflightPkts);
                if (first &&
                    (w.opcode == IBV_WR_RDMA_WRITE || w.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
                    t.reth.va = w.remote_addr;
                    t.reth.rkey = w.rkey;
                    t.reth.dma_len = w.length;
                }
                if (last) {
                    t.imm = __builtin_bswap32(w.imm);
                    t.ieth_rkey = w.invalidate_rkey;
                }
                payload = gather(w, off, len);
                next_psn = psn_add(psn, 1);
                qp.send_pkt = k + 1;
                break;
            }
        }
        e.emit(qp, qp.remote_ipv4, t, payload);
        qp.psn_next = next_psn;
        --budget;
        if (qp.send_pkt >= w.npkts) {
            ++qp.send_next;
            qp.send_pkt = 0;
            if (qp.type == IBV_QPT_UC) {
                // Unreliable: complete as soon as the last packet is on the wire.
                w.done = true;
                qp.psn_una = qp.psn_next;
                retire(qp);
                continue;
            }
        }
        if (qp.type == IBV_QPT_UC) {
            qp.psn_una = qp.psn_next;
            continue;
        }
        if (!qp.deadline_ns) arm_timer(e, qp);
    }
    return budget == 0;
}

void requester_receive(Engine& e, Qp& qp, const Inbound& in) {
    if (qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
    const proto::TransportHeaders& t = in.p.t;
    const uint32_t psn = t.bth.psn;
    const proto::OpcodeInfo& info = in.p.info();
    switch (info.kind) {
        case proto::OpKind::ack: {
            switch (proto::aeth_class(t.aeth.syndrome)) {
                case proto::AethClass::ack:
                    acknowledge(e, qp, psn);
                    break;
                case proto::AethClass::rnr_nak:
                    ++qp.naks_received;
                    acknowledge(e, qp, psn_sub(psn, 1));
                    if (qp.rnr_retry != 7 && ++qp.rnr_retries > qp.rnr_retry) {
                        fail(qp, IBV_WC_RNR_RETRY_EXC_ERR);
                        return;
                    }
                    rewind(qp, psn);
                    qp.resume_ns = e.now_ns() + rnr_delay_ns(t.aeth.syndrome & 0x1F);
                    break;
                case proto::AethClass::nak: {
                    ++qp.naks_received;
                    const proto::NakCode code = proto::nak_code(t.aeth.syndrome);
                    acknowledge(e, qp, psn_sub(psn, 1));
                    if (code == proto::NakCode::psn_seq_error) {
                        if (psn_not_older(psn, qp.psn_una) && psn_newer(qp.psn_next, psn))
                            rewind(qp, psn);
                        break;
                    }
                    fail(qp, code == proto::NakCode::remote_access ? IBV_WC_REM_ACCESS_ERR
                             : code == proto::NakCode::remote_op   ? IBV_WC_REM_OP_ERR
                                                                   : IBV_WC_REM_INV_REQ_ERR);
                    return;
                }
                case proto::AethClass::reserved:
                    break;
            }
            return;
        }
        case proto::OpKind::atomic_ack:
        case proto::OpKind::read_response: {
            // The oldest unfinished READ/atomic is the only one a response may be for:
            // the responder answers in order.
            std::size_t i = 0;
            for (; i < qp.send_next; ++i) {
                const SendWqe& w = qp.sq.at(i);
                if (!w.done && is_read_like(w.opcode)) break;
            }
            if (i == qp.send_next) return;  // a late duplicate
            SendWqe& w = qp.sq.at(i);
            if (!psn_in(w, psn)) return;
            // After a rewind to an earlier PSN, answers to requests sent before it are
            // ignored until the requests are sent again: psn_una never passes psn_next.
            if (!psn_newer(qp.psn_next, psn)) return;
            const uint32_t expected = psn_add(w.first_psn, w.read_pkts_done);
            if (psn != expected) {
                if (psn_newer(psn, expected) &&
                    !(qp.read_rewound && qp.read_rewind_psn == expected)) {
                    // A response was lost: ask again from the first one missing.
                    acknowledge(e, qp, psn_sub(expected, 1));
                    rewind(qp, expected);
                    qp.read_rewound = true;
                    qp.read_rewind_psn = expected;
                }
                return;
            }
            qp.read_rewound = false;
            if (info.kind == proto::OpKind::atomic_ack) {
                if (w.num_sge > 0 && w.sge[0].length >= 8) {
                    const uint64_t original = t.atomic_ack;
                    std::memcpy(reinterpret_cast<void*>(w.sge[0].addr), &original, 8);
                }
                w.read_pkts_done = 1;
            } else {
                scatter_local(w, w.read_pkts_done * qp.mtu, in.payload, in.payload_len);
                ++w.read_pkts_done;
            }
            // Responses acknowledge every earlier request too.
            for (std::size_t j = 0; j < i; ++j) qp.sq.at(j).done = true;
            if (w.read_pkts_done == w.npkts) w.done = true;
            if (psn_newer(psn_add(psn, 1), qp.psn_una)) qp.psn_una = psn_add(psn, 1);
            qp.retries = 0;
            arm_timer(e, qp);
            retire(qp);
            return;
        }
        default:
            return;
    }
}

void requester_timers(Engine& e, Qp& qp) {
    if (qp.type != IBV_QPT_RC || qp.state != IBV_QPS_RTS || !qp.deadline_ns) return;
    if (e.now_ns() < qp.deadline_ns) return;
    if (qp.psn_una == qp.psn_next) {
        qp.deadline_ns = 0;
        return;
    }
    ++qp.timeouts;
    if (qp.ctx->config.debug)
        std::fprintf(stderr,
                     "softverbs QP 0x%06x: timeout una 0x%06x next 0x%06x sq %zu send_next %zu\n",
                     qp_num(qp), qp.psn_una, qp.psn_next, qp.sq.size(), qp.send_next);
    // retry_cnt 7 is not "infinite" for transport retries (only rnr_retry 7 is). A timeout
    // while the peer is still sending to us is not counted: on a shared CPU a starved peer
    // (or our own thread) can be late by more than the timeout without losing anything.
    // A peer that has gone silent still exhausts retry_cnt.
    const bool counted = !qp.peer_heard;
    qp.peer_heard = false;
    if (counted && ++qp.retries > qp.retry_cnt) {
        fail(qp, IBV_WC_RETRY_EXC_ERR);
        return;
    }
    rewind(qp, qp.psn_una);
    qp.read_rewound = false;
    arm_timer(e, qp);
}

}  // namespace insert::softverbs
