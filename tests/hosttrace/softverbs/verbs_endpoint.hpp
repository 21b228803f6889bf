// Test helper: one verbs endpoint (context, PD, CQ, one RC or UD QP, one registered
// buffer) written only against <infiniband/verbs.h>, so the same code would run on a
// real RDMA NIC. Shared by the in-process unit tests and the two-process peer tool.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace insert::softverbs::test {

// What a peer needs to reach a QP and its memory (exchanged out of band).
struct PeerInfo {
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t rkey = 0;
    uint64_t addr = 0;
    uint8_t gid[16] = {};
};

class Endpoint {
  public:
    ~Endpoint();
    // Opens device `index` of ibv_get_device_list() (softverbs lists SOFTVERBS_IPS in
    // order), creates PD/CQ/QP and registers `buffer_bytes`. Returns false with error() set.
    bool open(int index, ibv_qp_type type, std::size_t buffer_bytes, bool with_channel = false,
              unsigned access = kDefaultAccess);
    bool connect(const PeerInfo& peer, ibv_mtu mtu = IBV_MTU_4096, uint8_t timeout = 10,
                 uint8_t retry_cnt = 7, uint8_t rnr_retry = 7);
    PeerInfo info() const;
    // Destroys the QP now (a peer that vanishes).
    void destroy_qp();

    int post_send(ibv_wr_opcode op, uint32_t offset, uint32_t length, uint64_t remote_addr,
                  uint32_t rkey, uint64_t wr_id, uint32_t imm = 0, uint64_t compare_add = 0,
                  uint64_t swap = 0);
    int post_recv(uint32_t offset, uint32_t length, uint64_t wr_id);
    int post_ud_send(ibv_ah* ah, uint32_t remote_qpn, uint32_t offset, uint32_t length,
                     uint64_t wr_id);
    // Polls until one completion arrives or the deadline passes (false).
    bool wait(ibv_wc& wc, std::chrono::milliseconds limit = std::chrono::seconds(10));
    // Blocks on the completion channel instead of busy polling.
    bool wait_event(ibv_wc& wc, std::chrono::milliseconds limit = std::chrono::seconds(10));

    uint8_t* buf() { return buffer_.data(); }
    ibv_context* ctx() { return ctx_; }
    ibv_pd* pd() { return pd_; }
    ibv_qp* qp() { return qp_; }
    ibv_mr* mr() { return mr_; }
    ibv_cq* cq() { return cq_; }
    const std::string& error() const { return error_; }

    static constexpr unsigned kDefaultAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    static constexpr uint32_t kQkey = 0x11111111;

  private:
    bool fail(const std::string& what);
    std::string error_;
    ibv_context* ctx_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_comp_channel* channel_ = nullptr;
    ibv_cq* cq_ = nullptr;
    ibv_qp* qp_ = nullptr;
    ibv_mr* mr_ = nullptr;
    ibv_qp_type type_ = IBV_QPT_RC;
    uint32_t psn_ = 0;
    alignas(64) std::vector<uint8_t> buffer_;
};

}  // namespace insert::softverbs::test
