// Completion queues, the error state, and the memory checks shared by both sides.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/protocol.hpp"

namespace insert::softverbs {

void push_completion(Cq& cq, const ibv_wc& wc) {
    CompChannel* channel = nullptr;
    {
        std::lock_guard guard(cq.lock);
        ibv_wc* slot = cq.entries.push();
        if (!slot) {
            ++cq.overflows;
            return;
        }
        *slot = wc;
        if (cq.armed && cq.cq.channel) {
            cq.armed = false;
            channel = to_channel(cq.cq.channel);
        }
    }
    if (channel) {
        // ibv_get_cq_event reads the CQ back from the pipe.
        ibv_cq* handle = &cq.cq;
        [[maybe_unused]] ssize_t n = write(channel->write_fd, &handle, sizeof(handle));
    }
}

uint32_t qp_num(const Qp& qp) {
    return qp.qpx.qp_base.qp_num;
}

void flush_queues(Qp& qp) {
    // Flushed work completes with IBV_WC_WR_FLUSH_ERR whether signaled or not.
    while (!qp.sq.empty()) {
        const SendWqe& w = qp.sq.front();
        ibv_wc wc{};
        wc.wr_id = w.wr_id;
        wc.status = IBV_WC_WR_FLUSH_ERR;
        wc.qp_num = qp_num(qp);
        push_completion(*qp.send_cq, wc);
        qp.sq.pop();
    }
    qp.send_next = 0;
    qp.send_pkt = 0;
    if (!qp.srq) {
        while (!qp.rq.empty()) {
            ibv_wc wc{};
            wc.wr_id = qp.rq.front().wr_id;
            wc.status = IBV_WC_WR_FLUSH_ERR;
            wc.qp_num = qp_num(qp);
            push_completion(*qp.recv_cq, wc);
            qp.rq.pop();
        }
    }
    qp.reads.clear();
}

void qp_enter_error(Qp& qp) {
    if (qp.state == IBV_QPS_ERR) return;
    qp.state = IBV_QPS_ERR;
    qp.qpx.qp_base.state = IBV_QPS_ERR;
    qp.deadline_ns = 0;
    flush_queues(qp);
    if (qp.ctx->async_write_fd >= 0) {
        ibv_async_event ev{};
        ev.element.qp = &qp.qpx.qp_base;
        ev.event_type = IBV_EVENT_QP_FATAL;
        [[maybe_unused]] ssize_t n = write(qp.ctx->async_write_fd, &ev, sizeof(ev));
    }
}

bool scatter(Context& ctx, const RecvWqe& wqe, uint32_t offset, const uint8_t* src, uint32_t len) {
    for (uint32_t i = 0; i < wqe.num_sge && len > 0; ++i) {
        const ibv_sge& s = wqe.sge[i];
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const uint32_t n = std::min(s.length - offset, len);
        Mr* mr = find_mr_lkey(ctx, s.lkey, s.addr + offset, n);
        if (!mr) return false;
        std::memcpy(mr_ptr(mr, s.addr + offset), src, n);
        src += n;
        len -= n;
        offset = 0;
    }
    return len == 0;
}

uint32_t mtu_bytes(ibv_mtu mtu) {
    switch (mtu) {
        case IBV_MTU_256:
            return 256;
        case IBV_MTU_512:
            return 512;
        case IBV_MTU_1024:
            return 1024;
        case IBV_MTU_2048:
            return 2048;
        case IBV_MTU_4096:
            return 4096;
    }
    return 1024;
}

uint64_t timeout_ns(uint8_t timeout) {
    // IBTA: 4.096 us * 2^timeout, 0 meaning infinite. Softverbs bounds it so a lost
    // packet on an idle link is noticed in reasonable time, and never fires sooner than
    // a loaded engine thread could answer.
    constexpr uint64_t kMinNs = 4'000'000, kMaxNs = 2'000'000'000;
    if (timeout == 0 || timeout > 31) return kMaxNs;
    const uint64_t ns = (4096ull << timeout);
    return std::clamp(ns, kMinNs, kMaxNs);
}

uint64_t rnr_delay_ns(uint8_t timer) {
    // IBTA table 45, in microseconds; index 0 is 655.36 ms.
    static constexpr uint32_t kUs[32] = {
        655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
        480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
        20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return uint64_t{kUs[timer & 31]} * 1000;
}

Mr* find_mr_lkey(Context& ctx, uint32_t lkey, uint64_t addr, uint64_t len) {
    const uint32_t slot = lkey >> 8;
    if (slot >= kMaxMrs) return nullptr;
    Mr* mr = ctx.mrs[slot];
    if (!mr || mr->mr.lkey != lkey) return nullptr;
    if (addr < mr->iova || addr - mr->iova > mr->mr.length ||
        len > mr->mr.length - (addr - mr->iova))
        return nullptr;
    return mr;
}

Mr* find_mr_rkey(Context& ctx, Pd* pd, uint32_t rkey, uint64_t va, uint64_t len, unsigned access) {
    const uint32_t slot = rkey >> 8;
    if (slot >= kMaxMrs) return nullptr;
    Mr* mr = ctx.mrs[slot];
    if (!mr || mr->mr.rkey != rkey || mr->mr.pd != &pd->pd || !(mr->access & access))
        return nullptr;
    if (va < mr->iova || va - mr->iova > mr->mr.length || len > mr->mr.length - (va - mr->iova))
        return nullptr;
    return mr;
}

Qp* find_qp(Context& ctx, uint32_t qpn) {
    const uint32_t slot = (qpn - ctx.qpn_base) & 0xFFFFFF;
    if (slot >= kMaxQps) return nullptr;
    return ctx.qps[slot];
}

}  // namespace insert::softverbs
