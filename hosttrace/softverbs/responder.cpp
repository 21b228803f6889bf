// RC responder and UD receiver: PSN checking (in order, duplicate, out of sequence), SEND
// placement into receive WQEs, WRITE/READ/atomic with rkey and bounds checks, coalesced
// ACKs, NAKs and READ responses.
#include <algorithm>
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
using proto::psn_sub;

constexpr uint32_t kAckCredits = 0x1F;  // "invalid credit count": no end-to-end flow control

void send_aeth(Engine& e, Qp& qp, uint8_t syndrome, uint32_t psn) {
    proto::TransportHeaders t;
    t.bth.opcode = proto::op::kAck;
    t.bth.dest_qp = qp.dest_qpn;
    t.bth.psn = psn;
    t.aeth.syndrome = syndrome;
    t.aeth.msn = qp.msn & proto::kPsnMask;
    e.emit(qp, qp.remote_ipv4, t, Gather{});
}

void nak(Engine& e, Qp& qp, proto::NakCode code, uint32_t psn) {
    send_aeth(e, qp, proto::aeth_nak(code), psn);
}

Ring<RecvWqe>& recv_queue(Qp& qp) {
    return qp.srq ? qp.srq->rq : qp.rq;
}

void complete_recv(Qp& qp, const RecvWqe& wqe, ibv_wc_opcode op, ibv_wc_status status,
                   uint32_t byte_len, const proto::TransportHeaders& t, bool imm, bool inv) {
    ibv_wc wc{};
    wc.wr_id = wqe.wr_id;
    wc.status = status;
    wc.opcode = op;
    wc.byte_len = byte_len;
    wc.qp_num = qp_num(qp);
    wc.src_qp = qp.type == IBV_QPT_UD ? t.deth.src_qp : qp.dest_qpn;
    if (imm) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = __builtin_bswap32(t.imm);  // network order, as verbs delivers it
    }
    if (inv) {
        wc.wc_flags |= IBV_WC_WITH_INV;
        wc.invalidated_rkey = t.ieth_rkey;
    }
    push_completion(*qp.recv_cq, wc);
}

// Starts answering a READ at `psn` (new, or a duplicate the requester asks again for).
bool start_read(Engine& e, Qp& qp, uint32_t psn, const proto::Reth& reth) {
    Mr* mr = find_mr_rkey(*qp.ctx, qp.pd, reth.rkey, reth.va, reth.dma_len, IBV_ACCESS_REMOTE_READ);
    if ((!mr && reth.dma_len > 0) || !(qp.access & IBV_ACCESS_REMOTE_READ)) {
        nak(e, qp, proto::NakCode::remote_access, psn);
        return false;
    }
    ReadJob* job = qp.reads.push();
    if (!job) {
        // More READs in flight than max_dest_rd_atomic allows.
        nak(e, qp, proto::NakCode::invalid_request, psn);
        return false;
    }
    *job = ReadJob{};
    job->psn = psn;
    job->first_psn = psn;
    job->npkts = std::max<uint32_t>(1, (reth.dma_len + qp.mtu - 1) / qp.mtu);
    job->src = mr ? mr_ptr(mr, reth.va) : nullptr;
    job->length = reth.dma_len;
    return true;
}

void remember_atomic(Qp& qp, uint32_t psn, uint64_t original) {
    AtomicReplay& r = qp.atomic_replay[qp.atomic_replay_next++ % kAtomicReplay];
    r = {psn, true, original};
}

void send_atomic_ack(Engine& e, Qp& qp, uint32_t psn, uint64_t original) {
    proto::TransportHeaders t;
    t.bth.opcode = proto::op::kAtomicAck;
    t.bth.dest_qp = qp.dest_qpn;
    t.bth.psn = psn;
    t.aeth.syndrome = proto::aeth_ack(kAckCredits);
    t.aeth.msn = qp.msn & proto::kPsnMask;
    t.atomic_ack = original;
    e.emit(qp, qp.remote_ipv4, t, Gather{});
}

void handle_duplicate(Engine& e, Qp& qp, const Inbound& in) {
    const proto::TransportHeaders& t = in.p.t;
    switch (in.p.info().kind) {
        case proto::OpKind::read_request:
            // The requester rewound to here and will ask again for everything after it:
            // drop the answers in progress from this PSN on, keep the older ones (they
            // are the re-executions of the READs it asked again for just before).
            while (!qp.reads.empty() && !psn_newer(t.bth.psn, qp.reads.back().first_psn))
                qp.reads.pop_back();
            start_read(e, qp, t.bth.psn, t.reth);
            return;
        case proto::OpKind::cmp_swap:
        case proto::OpKind::fetch_add:
            for (const AtomicReplay& r : qp.atomic_replay)
                if (r.valid && r.psn == t.bth.psn) {
                    send_atomic_ack(e, qp, r.psn, r.original);
                    return;
                }
            return;  // too old to replay; the requester's timer will give up
        default:
            qp.ack_pending = true;
            return;
    }
}

// Executes a 64-bit atomic on the target (host byte order, as the NIC's host sees it).
bool do_atomic(Engine& e, Qp& qp, const Inbound& in, uint64_t& original) {
    const proto::AtomicEth& a = in.p.t.atomic;
    if (a.va % 8 != 0) {
        nak(e, qp, proto::NakCode::invalid_request, in.p.t.bth.psn);
        return false;
    }
    Mr* mr = find_mr_rkey(*qp.ctx, qp.pd, a.rkey, a.va, 8, IBV_ACCESS_REMOTE_ATOMIC);
    if (!mr || !(qp.access & IBV_ACCESS_REMOTE_ATOMIC)) {
        nak(e, qp, proto::NakCode::remote_access, in.p.t.bth.psn);
        return false;
    }
    auto* target = reinterpret_cast<uint64_t*>(mr_ptr(mr, a.va));
    if (in.p.info().kind == proto::OpKind::cmp_swap) {
        original = a.compare;
        __atomic_compare_exchange_n(target, &original, a.swap_add, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
    } else {
        original = __atomic_fetch_add(target, a.swap_add, __ATOMIC_SEQ_CST);
    }
    return true;
}

// Handles the packet with the expected PSN. Returns false when it was refused: NAKed on
// RC, silently dropped on UC (which has no responses).
bool handle_in_order(Engine& e, Qp& qp, const Inbound& in) {
    const bool reliable = qp.type == IBV_QPT_RC;
    auto nak = [&](Engine& eng, Qp& q, proto::NakCode code, uint32_t psn) {
        if (reliable) insert::softverbs::nak(eng, q, code, psn);
    };
    auto send_aeth = [&](Engine& eng, Qp& q, uint8_t syndrome, uint32_t psn) {
        if (reliable) insert::softverbs::send_aeth(eng, q, syndrome, psn);
    };
    const proto::TransportHeaders& t = in.p.t;
    const proto::OpcodeInfo& info = in.p.info();
    const uint32_t psn = t.bth.psn;
    const bool first =
        info.position == proto::Position::first || info.position == proto::Position::only;
    const bool last =
        info.position == proto::Position::last || info.position == proto::Position::only;
    InboundMessage& m = qp.in;

    switch (info.kind) {
        case proto::OpKind::send: {
            if (first) {
                if (m.kind != RecvKind::none) {
                    nak(e, qp, proto::NakCode::invalid_request, psn);
                    return false;
                }
                // UC drops a message whose packet was lost; its receive WQE is kept for the
                // next message rather than completed.
                RecvWqe wqe;
                if (m.have_wqe) {
                    wqe = m.wqe;
                } else {
                    Ring<RecvWqe>& rq = recv_queue(qp);
                    if (rq.empty()) {
                        send_aeth(e, qp, proto::aeth_rnr_nak(qp.min_rnr_timer), psn);
                        return false;
                    }
                    wqe = rq.front();
                    rq.pop();
                }
                m = InboundMessage{};
                m.kind = RecvKind::send;
                m.wqe = wqe;
                m.have_wqe = true;
            } else if (m.kind != RecvKind::send) {
                nak(e, qp, proto::NakCode::invalid_request, psn);
                return false;
            }
            if (!scatter(*qp.ctx, m.wqe, m.offset, in.payload, in.payload_len)) {
                complete_recv(qp, m.wqe, IBV_WC_RECV, IBV_WC_LOC_LEN_ERR, m.offset, t, false,
                              false);
                m.kind = RecvKind::none;
                m.have_wqe = false;
                nak(e, qp, proto::NakCode::invalid_request, psn);
                return false;
            }
            m.offset += in.payload_len;
            if (last) {
                complete_recv(qp, m.wqe, IBV_WC_RECV, IBV_WC_SUCCESS, m.offset, t, info.has_imm,
                              info.has_inv);
                m.kind = RecvKind::none;
                m.have_wqe = false;
                ++qp.msn;
            }
            return true;
        }
        case proto::OpKind::write: {
            if (first) {
                if (m.kind != RecvKind::none) {
                    nak(e, qp, proto::NakCode::invalid_request, psn);
                    return false;
                }
                const bool keep_wqe = m.have_wqe;
                const RecvWqe kept = m.wqe;
                Mr* mr = find_mr_rkey(*qp.ctx, qp.pd, t.reth.rkey, t.reth.va, t.reth.dma_len,
                                      IBV_ACCESS_REMOTE_WRITE);
                if ((!mr && t.reth.dma_len > 0) || !(qp.access & IBV_ACCESS_REMOTE_WRITE)) {
                    nak(e, qp, proto::NakCode::remote_access, psn);
                    return false;
                }
                m = InboundMessage{};
                m.have_wqe = keep_wqe;
                m.wqe = kept;
                m.kind = RecvKind::write;
                m.mr = mr;
                m.va = t.reth.va;
                m.dma_len = t.reth.dma_len;
            } else if (m.kind != RecvKind::write) {
                nak(e, qp, proto::NakCode::invalid_request, psn);
                return false;
            }
            if (m.offset + in.payload_len > m.dma_len) {
                m.kind = RecvKind::none;
                nak(e, qp, proto::NakCode::invalid_request, psn);
                return false;
            }
            if (last && info.has_imm && !m.have_wqe && recv_queue(qp).empty()) {
                send_aeth(e, qp, proto::aeth_rnr_nak(qp.min_rnr_timer), psn);
                return false;
            }
            if (in.payload_len)
                std::memcpy(mr_ptr(m.mr, m.va + m.offset), in.payload, in.payload_len);
            m.offset += in.payload_len;
            if (last) {
                if (info.has_imm) {
                    RecvWqe wqe = m.wqe;
                    if (!m.have_wqe) {
                        Ring<RecvWqe>& rq = recv_queue(qp);
                        wqe = rq.front();
                        rq.pop();
                    }
                    m.have_wqe = false;
                    complete_recv(qp, wqe, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SUCCESS, m.dma_len, t,
                                  true, false);
                }
                m.kind = RecvKind::none;
                ++qp.msn;
            }
            return true;
        }
        case proto::OpKind::read_request:
            if (!start_read(e, qp, psn, t.reth)) return false;
            ++qp.msn;
            return true;
        case proto::OpKind::cmp_swap:
        case proto::OpKind::fetch_add: {
            uint64_t original = 0;
            if (!do_atomic(e, qp, in, original)) return false;
            ++qp.msn;
            remember_atomic(qp, psn, original);
            send_atomic_ack(e, qp, psn, original);
            return true;
        }
        default:
            nak(e, qp, proto::NakCode::invalid_request, psn);
            return false;
    }
}

}  // namespace

void responder_receive(Engine& e, Qp& qp, const Inbound& in) {
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
    const uint32_t psn = in.p.t.bth.psn;
    if (psn != qp.epsn) {
        if (psn_newer(psn, qp.epsn)) {
            // One NAK per gap: later packets of the same burst are dropped silently.
            if (!qp.nak_sent) {
                nak(e, qp, proto::NakCode::psn_seq_error, qp.epsn);
                qp.nak_sent = true;
            }
        } else {
            handle_duplicate(e, qp, in);
        }
        return;
    }
    if (!handle_in_order(e, qp, in)) return;
    qp.nak_sent = false;
    const proto::OpcodeInfo& info = in.p.info();
    if (info.kind == proto::OpKind::read_request)
        qp.epsn = psn_add(psn, qp.reads.back().npkts);
    else
        qp.epsn = psn_add(psn, 1);
    if (in.p.t.bth.ack_req && info.kind != proto::OpKind::read_request &&
        info.kind != proto::OpKind::cmp_swap && info.kind != proto::OpKind::fetch_add)
        qp.ack_pending = true;
}

void uc_receive(Engine& e, Qp& qp, const Inbound& in) {
    if (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS && qp.state != IBV_QPS_SQD) return;
    const uint32_t psn = in.p.t.bth.psn;
    const proto::Position pos = in.p.info().position;
    const bool first = pos == proto::Position::first || pos == proto::Position::only;
    if (psn != qp.epsn) {
        // A packet was lost: the message in progress is dropped, and reception resumes at
        // the next First/Only (IBTA 9.8.4: UC has no retransmission).
        qp.in.kind = RecvKind::none;
        qp.epsn = psn_add(psn, 1);
        if (!first) return;
    } else {
        qp.epsn = psn_add(psn, 1);
    }
    if (!handle_in_order(e, qp, in)) qp.in.kind = RecvKind::none;
}

bool responder_transmit(Engine& e, Qp& qp) {
    if (qp.cnp_pending) {
        proto::TransportHeaders t;
        t.bth.opcode = proto::op::kCnp;
        t.bth.dest_qp = qp.dest_qpn;
        t.bth.becn = true;
        e.emit(qp, qp.remote_ipv4, t, Gather{});
        ++e.counters().cnps_sent;
        qp.cnp_pending = false;
    }
    uint32_t budget = 2 * kBatch;
    while (!qp.reads.empty() && budget > 0) {
        ReadJob& job = qp.reads.front();
        const uint32_t off = job.done * qp.mtu;
        const uint32_t len = std::min(qp.mtu, job.length - std::min(off, job.length));
        const bool first = job.done == 0;
        const bool last = job.done + 1 == job.npkts;
        proto::TransportHeaders t;
        t.bth.opcode = first && last ? proto::op::kReadResponseOnly
                       : first       ? proto::op::kReadResponseFirst
                       : last        ? proto::op::kReadResponseLast
                                     : proto::op::kReadResponseMiddle;
        t.bth.dest_qp = qp.dest_qpn;
        t.bth.psn = job.psn;
        t.aeth.syndrome = proto::aeth_ack(kAckCredits);
        t.aeth.msn = qp.msn & proto::kPsnMask;
        Gather g;
        if (len) g.ranges[g.count++] = {job.src + off, len};
        e.emit(qp, qp.remote_ipv4, t, g);
        job.psn = psn_add(job.psn, 1);
        ++job.done;
        --budget;
        if (job.done == job.npkts) qp.reads.pop();
    }
    // An ACK must not overtake READ responses for earlier PSNs.
    if (qp.ack_pending && qp.reads.empty()) {
        send_aeth(e, qp, proto::aeth_ack(kAckCredits), psn_sub(qp.epsn, 1));
        qp.ack_pending = false;
    }
    return !qp.reads.empty();
}

void ud_receive(Engine& e, Qp& qp, const Inbound& in) {
    (void)e;
    if (qp.type != IBV_QPT_UD || (qp.state != IBV_QPS_RTR && qp.state != IBV_QPS_RTS)) return;
    const proto::TransportHeaders& t = in.p.t;
    if (t.deth.qkey != qp.qkey) return;  // IBTA: silently dropped
    Ring<RecvWqe>& rq = recv_queue(qp);
    if (rq.empty()) return;  // UD has no RNR: the datagram is lost
    const RecvWqe wqe = rq.front();
    rq.pop();
    // The first 40 bytes receive the GRH; for RoCEv2 over IPv4 its last 20 hold the IPv4
    // header (rdma-core's ibv_init_ah_from_wc reads them from there).
    uint8_t grh[40] = {};
    uint8_t* ip = grh + 20;
    ip[0] = 0x45;
    ip[1] = 0;
    const uint16_t total = static_cast<uint16_t>(20 + in.p.udp_len);
    ip[2] = static_cast<uint8_t>(total >> 8);
    ip[3] = static_cast<uint8_t>(total);
    ip[8] = 64;
    ip[9] = 17;
    for (int i = 0; i < 4; ++i) {
        ip[12 + i] = static_cast<uint8_t>(in.src_ipv4 >> (24 - 8 * i));
        ip[16 + i] = static_cast<uint8_t>(qp.ctx->device->ipv4 >> (24 - 8 * i));
    }
    const bool ok = scatter(*qp.ctx, wqe, 0, grh, sizeof(grh)) &&
                    scatter(*qp.ctx, wqe, sizeof(grh), in.payload, in.payload_len);
    ibv_wc wc{};
    wc.wr_id = wqe.wr_id;
    wc.status = ok ? IBV_WC_SUCCESS : IBV_WC_LOC_LEN_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = static_cast<uint32_t>(sizeof(grh)) + in.payload_len;
    wc.qp_num = qp_num(qp);
    wc.src_qp = t.deth.src_qp;
    wc.wc_flags = IBV_WC_GRH;
    if (in.p.info().has_imm) {
        wc.wc_flags |= IBV_WC_WITH_IMM;
        wc.imm_data = __builtin_bswap32(t.imm);
    }
    push_completion(*qp.recv_cq, wc);
}

}  // namespace insert::softverbs
