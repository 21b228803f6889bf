// The extended post-send API (ibv_qp_ex: ibv_wr_start / ibv_wr_* / ibv_wr_complete), which
// perftest uses by default. Work requests are collected between start and complete and
// then posted exactly like an ibv_post_send list.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/ops.hpp"

namespace insert::softverbs {

int post_send_list(Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad);

namespace {

ibv_send_wr* begin_wr(ibv_qp_ex* qpx, ibv_wr_opcode op) {
    Qp& qp = *to_qp(qpx);
    qp.batch.emplace_back();
    qp.batch_sge.emplace_back();
    qp.batch_inline.emplace_back();
    ibv_send_wr& wr = qp.batch.back();
    wr = ibv_send_wr{};
    wr.wr_id = qpx->wr_id;
    wr.send_flags = qpx->wr_flags;
    wr.opcode = op;
    return &wr;
}

ibv_send_wr* current(ibv_qp_ex* qpx) {
    Qp& qp = *to_qp(qpx);
    if (qp.batch.empty()) {
        qp.batch_error = EINVAL;  // a setter without a preceding wr_* builder
        return nullptr;
    }
    return &qp.batch.back();
}

void wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
    ibv_send_wr* wr = begin_wr(q, IBV_WR_RDMA_WRITE);
    wr->wr.rdma = {addr, rkey};
}
void wr_rdma_write_imm(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, __be32 imm) {
    ibv_send_wr* wr = begin_wr(q, IBV_WR_RDMA_WRITE_WITH_IMM);
    wr->wr.rdma = {addr, rkey};
    wr->imm_data = imm;
}
void wr_rdma_read(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
    ibv_send_wr* wr = begin_wr(q, IBV_WR_RDMA_READ);
    wr->wr.rdma = {addr, rkey};
}
void wr_send(ibv_qp_ex* q) {
    begin_wr(q, IBV_WR_SEND);
}
void wr_send_imm(ibv_qp_ex* q, __be32 imm) {
    begin_wr(q, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}
void wr_send_inv(ibv_qp_ex* q, uint32_t rkey) {
    begin_wr(q, IBV_WR_SEND_WITH_INV)->invalidate_rkey = rkey;
}
void wr_cmp_swp(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
    ibv_send_wr* wr = begin_wr(q, IBV_WR_ATOMIC_CMP_AND_SWP);
    wr->wr.atomic = {addr, compare, swap, rkey};
}
void wr_fetch_add(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t add) {
    ibv_send_wr* wr = begin_wr(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
    wr->wr.atomic = {addr, add, 0, rkey};
}
void wr_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, uint32_t qpn, uint32_t qkey) {
    if (ibv_send_wr* wr = current(q)) wr->wr.ud = {ah, qpn, qkey};
}
void wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t length) {
    Qp& qp = *to_qp(q);
    if (!current(q)) return;
    qp.batch_sge.back()[0] = {addr, length, lkey};
    qp.batch.back().num_sge = 1;
}
void wr_set_sge_list(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
    Qp& qp = *to_qp(q);
    if (!current(q)) return;
    if (n > kMaxSendSge) {
        qp.batch_error = EINVAL;
        return;
    }
    std::copy(list, list + n, qp.batch_sge.back().begin());
    qp.batch.back().num_sge = static_cast<int>(n);
}
void wr_set_inline_data_list(ibv_qp_ex* q, size_t n, const ibv_data_buf* bufs) {
    Qp& qp = *to_qp(q);
    if (!current(q)) return;
    std::size_t total = 0;
    for (size_t i = 0; i < n; ++i) total += bufs[i].length;
    if (total > kMaxInline) {
        qp.batch_error = EINVAL;
        return;
    }
    uint8_t* dst = qp.batch_inline.back().data();
    std::size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        std::memcpy(dst + off, bufs[i].addr, bufs[i].length);
        off += bufs[i].length;
    }
    qp.batch_sge.back()[0] = {reinterpret_cast<uintptr_t>(dst), static_cast<uint32_t>(total), 0};
    qp.batch.back().num_sge = 1;
    qp.batch.back().send_flags |= IBV_SEND_INLINE;
}
void wr_set_inline_data(ibv_qp_ex* q, void* addr, size_t length) {
    const ibv_data_buf buf{addr, length};
    wr_set_inline_data_list(q, 1, &buf);
}
void wr_start(ibv_qp_ex* q) {
    Qp& qp = *to_qp(q);
    qp.batch.clear();
    qp.batch_sge.clear();
    qp.batch_inline.clear();
    qp.batch_error = 0;
}
void wr_abort(ibv_qp_ex* q) {
    wr_start(q);
}
int wr_complete(ibv_qp_ex* q) {
    Qp& qp = *to_qp(q);
    int rc = qp.batch_error;
    if (!rc && !qp.batch.empty()) {
        for (std::size_t i = 0; i < qp.batch.size(); ++i) {
            qp.batch[i].sg_list = qp.batch_sge[i].data();
            qp.batch[i].next = i + 1 < qp.batch.size() ? &qp.batch[i + 1] : nullptr;
        }
        ibv_send_wr* bad = nullptr;
        rc = post_send_list(qp, qp.batch.data(), &bad);
    }
    wr_start(q);
    return rc;
}

}  // namespace

void fill_qp_ex_ops(ibv_qp_ex& q) {
    q.wr_atomic_cmp_swp = wr_cmp_swp;
    q.wr_atomic_fetch_add = wr_fetch_add;
    q.wr_rdma_read = wr_rdma_read;
    q.wr_rdma_write = wr_rdma_write;
    q.wr_rdma_write_imm = wr_rdma_write_imm;
    q.wr_send = wr_send;
    q.wr_send_imm = wr_send_imm;
    q.wr_send_inv = wr_send_inv;
    q.wr_set_ud_addr = wr_set_ud_addr;
    q.wr_set_inline_data = wr_set_inline_data;
    q.wr_set_inline_data_list = wr_set_inline_data_list;
    q.wr_set_sge = wr_set_sge;
    q.wr_set_sge_list = wr_set_sge_list;
    q.wr_start = wr_start;
    q.wr_complete = wr_complete;
    q.wr_abort = wr_abort;
}

}  // namespace insert::softverbs
