#include "tests/hosttrace/softverbs/verbs_endpoint.hpp"

#include <arpa/inet.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

namespace insert::softverbs::test {

Endpoint::~Endpoint() {
    if (qp_) ibv_destroy_qp(qp_);
    if (mr_) ibv_dereg_mr(mr_);
    if (cq_) ibv_destroy_cq(cq_);
    if (channel_) ibv_destroy_comp_channel(channel_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
}

bool Endpoint::fail(const std::string& what) {
    error_ = what + ": " + std::strerror(errno);
    return false;
}

bool Endpoint::open(int index, ibv_qp_type type, std::size_t buffer_bytes, bool with_channel,
                    unsigned access) {
    type_ = type;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) return fail("ibv_get_device_list");
    if (index < n) ctx_ = ibv_open_device(list[index]);
    ibv_free_device_list(list);
    if (!ctx_) return fail("ibv_open_device " + std::to_string(index) + " of " + std::to_string(n));
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return fail("ibv_alloc_pd");
    if (with_channel && !(channel_ = ibv_create_comp_channel(ctx_)))
        return fail("ibv_create_comp_channel");
    cq_ = ibv_create_cq(ctx_, 256, this, channel_, 0);
    if (!cq_) return fail("ibv_create_cq");
    buffer_.assign(buffer_bytes, 0);
    mr_ = ibv_reg_mr(pd_, buffer_.data(), buffer_.size(), static_cast<int>(access));
    if (!mr_) return fail("ibv_reg_mr");
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = type;
    init.cap.max_send_wr = 128;
    init.cap.max_recv_wr = 128;
    init.cap.max_send_sge = 4;
    init.cap.max_recv_sge = 4;
    init.cap.max_inline_data = 64;
    qp_ = ibv_create_qp(pd_, &init);
    if (!qp_) return fail("ibv_create_qp");
    std::random_device rd;
    psn_ = rd() & 0xFFFFFF;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        a.qkey = kQkey;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = static_cast<int>(access);
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    if (int rc = ibv_modify_qp(qp_, &a, mask)) {
        errno = rc;
        return fail("modify_qp INIT");
    }
    return true;
}

void Endpoint::destroy_qp() {
    if (qp_) ibv_destroy_qp(qp_);
    qp_ = nullptr;
}

PeerInfo Endpoint::info() const {
    PeerInfo p;
    p.qpn = qp_ ? qp_->qp_num : 0;
    p.psn = psn_;
    p.rkey = mr_->rkey;
    p.addr = reinterpret_cast<uintptr_t>(buffer_.data());
    ibv_gid gid;
    ibv_query_gid(ctx_, 1, 0, &gid);
    std::memcpy(p.gid, gid.raw, 16);
    return p;
}

bool Endpoint::connect(const PeerInfo& peer, ibv_mtu mtu, uint8_t timeout, uint8_t retry_cnt,
                       uint8_t rnr_retry) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    int mask = IBV_QP_STATE;
    if (type_ != IBV_QPT_UD) {
        a.path_mtu = mtu;
        a.dest_qp_num = peer.qpn;
        a.rq_psn = peer.psn;
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
        a.ah_attr.grh.hop_limit = 64;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        // Responder resources and RNR timer exist on RC only.
        if (type_ == IBV_QPT_RC) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
    if (int rc = ibv_modify_qp(qp_, &a, mask)) {
        errno = rc;
        return fail("modify_qp RTR");
    }
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn_;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type_ == IBV_QPT_RC) {
        a.timeout = timeout;
        a.retry_cnt = retry_cnt;
        a.rnr_retry = rnr_retry;
        a.max_rd_atomic = 16;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if (int rc = ibv_modify_qp(qp_, &a, mask)) {
        errno = rc;
        return fail("modify_qp RTS");
    }
    return true;
}

int Endpoint::post_send(ibv_wr_opcode op, uint32_t offset, uint32_t length, uint64_t remote_addr,
                        uint32_t rkey, uint64_t wr_id, uint32_t imm, uint64_t compare_add,
                        uint64_t swap) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer_.data() + offset), length, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = remote_addr;
        wr.wr.atomic.rkey = rkey;
        wr.wr.atomic.compare_add = compare_add;
        wr.wr.atomic.swap = swap;
    } else {
        wr.wr.rdma.remote_addr = remote_addr;
        wr.wr.rdma.rkey = rkey;
    }
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp_, &wr, &bad);
}

int Endpoint::post_recv(uint32_t offset, uint32_t length, uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer_.data() + offset), length, mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp_, &wr, &bad);
}

int Endpoint::post_ud_send(ibv_ah* ah, uint32_t remote_qpn, uint32_t offset, uint32_t length,
                           uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer_.data() + offset), length, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp_, &wr, &bad);
}

bool Endpoint::wait(ibv_wc& wc, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        const int n = ibv_poll_cq(cq_, 1, &wc);
        if (n < 0) return false;
        if (n == 1) return true;
        std::this_thread::yield();
    }
    return false;
}

bool Endpoint::wait_event(ibv_wc& wc, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        // Arm first, then poll: a completion that raced the arming is still seen.
        if (ibv_req_notify_cq(cq_, 0)) return false;
        if (ibv_poll_cq(cq_, 1, &wc) == 1) return true;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd pfd{channel_->fd, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
        ibv_cq* cq = nullptr;
        void* context = nullptr;
        if (ibv_get_cq_event(channel_, &cq, &context)) return false;
        ibv_ack_cq_events(cq, 1);
        if (cq != cq_ || context != this) return false;
    }
}

}  // namespace insert::softverbs::test
