#include "bench/attack/rc_qp.hpp"

#include <arpa/inet.h>

#include <cstring>
#include <thread>

namespace insert::attack {

namespace {

// perftest's RC settings, so that the attacker's QP looks like a perftest client's:
// 4 KB path MTU, ACK timeout 14 (67 ms), 7 retries, infinite RNR retries.
constexpr ibv_mtu kMtu = IBV_MTU_4096;
constexpr uint8_t kTimeout = 14, kRetryCnt = 7, kRnrRetry = 7, kMinRnrTimer = 12;
constexpr unsigned kAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

}  // namespace

bool ipv4_gid(const std::string& ip, std::array<uint8_t, 16>& gid) {
    in_addr a{};
    if (::inet_pton(AF_INET, ip.c_str(), &a) != 1) return false;
    gid.fill(0);
    gid[10] = gid[11] = 0xFF;
    std::memcpy(&gid[12], &a, 4);
    return true;
}

std::string gid_ipv4(const std::array<uint8_t, 16>& gid) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    if (std::memcmp(gid.data(), kPrefix, 12) != 0) return "";
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &gid[12], text, sizeof text);
    return text;
}

RcQp::~RcQp() {
    if (qp_) ibv_destroy_qp(qp_);
    if (mr_) ibv_dereg_mr(mr_);
    if (cq_) ibv_destroy_cq(cq_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
}

bool RcQp::fail(const std::string& what) {
    error_ = what;
    return false;
}

bool RcQp::open(const std::string& local_ip, std::size_t buffer_bytes) {
    std::array<uint8_t, 16> want{};
    if (!local_ip.empty() && !ipv4_gid(local_ip, want))
        return fail("not an IPv4 address: " + local_ip);
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
        if (list) ibv_free_device_list(list);
        return fail("no RDMA device (for softverbs: LD_LIBRARY_PATH=build/hosttrace/softverbs)");
    }
    std::string seen;
    for (int i = 0; i < n && !ctx_; ++i) {
        ibv_context* c = ibv_open_device(list[i]);
        if (!c) continue;  // softverbs: the address is in use by another process
        ibv_gid g;
        if (ibv_query_gid(c, 1, 0, &g) == 0) {
            std::array<uint8_t, 16> gid;
            std::memcpy(gid.data(), g.raw, 16);
            seen += (seen.empty() ? "" : ", ") + gid_ipv4(gid);
            if (local_ip.empty() || gid == want) {
                ctx_ = c;
                gid_ = gid;
                break;
            }
        }
        ibv_close_device(c);
    }
    ibv_free_device_list(list);
    if (!ctx_)
        return fail("no usable RDMA device with address " + local_ip +
                    " (devices: " + (seen.empty() ? "none could be opened" : seen) + ")");
    local_ip_ = gid_ipv4(gid_);
    buffer_.assign(buffer_bytes, 0x5A);
    pd_ = ibv_alloc_pd(ctx_);
    if (!pd_) return fail("ibv_alloc_pd failed");
    cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    if (!cq_) return fail("ibv_create_cq failed");
    mr_ = ibv_reg_mr(pd_, buffer_.data(), buffer_.size(), kAccess);
    if (!mr_) return fail("ibv_reg_mr failed");
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 16;
    init.cap.max_recv_wr = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp_ = ibv_create_qp(pd_, &init);
    if (!qp_) return fail("ibv_create_qp failed");
    return true;
}

bool RcQp::modify(ibv_qp_attr& a, int mask, const char* to) {
    const int rc = ibv_modify_qp(qp_, &a, mask);
    if (rc != 0) return fail(std::string("ibv_modify_qp to ") + to + ": " + std::strerror(rc));
    return true;
}

bool RcQp::connect(const RcPeer& peer, uint32_t sq_psn) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    if (!modify(a, IBV_QP_STATE, "RESET")) return false;

    a = {};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = kAccess;
    if (!modify(a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT"))
        return false;

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = kMtu;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = peer.psn & 0xFFFFFF;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = kMinRnrTimer;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.sgid_index = 0;
    std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid.data(), 16);
    if (!modify(a,
                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                "RTR"))
        return false;

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = sq_psn & 0xFFFFFF;
    a.timeout = kTimeout;
    a.retry_cnt = kRetryCnt;
    a.rnr_retry = kRnrRetry;
    a.max_rd_atomic = 1;
    return modify(a,
                  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
                  "RTS");
}

bool RcQp::write(uint64_t wr_id, uint64_t remote_va, uint32_t rkey, uint32_t len, ibv_wc& wc,
                 std::chrono::milliseconds limit) {
    if (len > buffer_.size()) return fail("write longer than the buffer");
    ibv_sge sge{};
    sge.addr = addr();
    sge.length = len;
    sge.lkey = mr_->lkey;
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_va;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    const int rc = ibv_post_send(qp_, &wr, &bad);
    if (rc != 0) return fail(std::string("ibv_post_send: ") + std::strerror(rc));
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        const int got = ibv_poll_cq(cq_, 1, &wc);
        if (got < 0) return fail("ibv_poll_cq failed");
        if (got == 1) return true;
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return fail("no completion for WRITE " + std::to_string(wr_id) + " within " +
                std::to_string(limit.count()) + " ms");
}

}  // namespace insert::attack
