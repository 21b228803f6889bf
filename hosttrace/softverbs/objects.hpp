// The provider-side objects behind the verbs handles. Each embeds the public struct of
// <infiniband/verbs.h> as its first member, so the pointer the application holds converts
// back with a static_cast-free reinterpret (the layout rule a real provider relies on too).
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "hosttrace/softverbs/limits.hpp"
#include "hosttrace/softverbs/ring.hpp"

namespace insert::softverbs {

class Engine;
struct Context;

// One virtual RoCEv2 device per local IPv4 address.
struct Device {
    ibv_device dev{};   // must be first
    uint32_t ipv4 = 0;  // host byte order
    int ifindex = 0;
    int if_mtu = 1500;
    char ifname[32] = {};
};

struct Pd {
    ibv_pd pd{};
};

struct Mr {
    ibv_mr mr{};
    uint64_t iova = 0;  // the address remote peers use (== addr unless reg_mr_iova)
    unsigned access = 0;
};

struct CompChannel {
    ibv_comp_channel ch{};
    int write_fd = -1;  // ch.fd is the read end of the same pipe
};

struct Cq {
    ibv_cq cq{};
    std::mutex lock;
    Ring<ibv_wc> entries;
    bool armed = false;
    uint64_t overflows = 0;  // completions lost because the application never polled
};

struct Ah {
    ibv_ah ah{};
    uint32_t ipv4 = 0;  // destination, host byte order
};

struct RecvWqe {
    uint64_t wr_id = 0;
    uint32_t num_sge = 0;
    std::array<ibv_sge, kMaxRecvSge> sge{};
};

struct Srq {
    ibv_srq srq{};
    Ring<RecvWqe> rq;  // guarded by the context lock
    uint32_t max_sge = 0;
};

// A send work request as the engine keeps it until it completes; retransmission rebuilds
// packets from it, so no packet copies are kept.
struct SendWqe {
    uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    unsigned flags = 0;
    uint32_t imm = 0;  // network order, as ibv_send_wr carries it
    uint32_t invalidate_rkey = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t length = 0;  // total bytes of the SGEs or inline data
    uint32_t num_sge = 0;
    std::array<ibv_sge, kMaxSendSge> sge{};
    bool is_inline = false;
    std::array<uint8_t, kMaxInline> inline_data{};
    // UD addressing
    uint32_t ud_ipv4 = 0;
    uint32_t ud_qpn = 0;
    uint32_t ud_qkey = 0;
    // Transmission state, set when the engine first sends it.
    bool started = false;
    bool done = false;  // acknowledged or answered; completes when it reaches the head
    uint32_t first_psn = 0;
    uint32_t npkts = 0;
    uint32_t read_pkts_done = 0;  // READ: response packets received in order
};

enum class RecvKind : uint8_t { none, send, write };

// The responder's view of the message being received.
struct InboundMessage {
    RecvKind kind = RecvKind::none;
    bool have_wqe = false;
    RecvWqe wqe;
    uint32_t offset = 0;  // bytes placed so far
    // WRITE: translated target
    Mr* mr = nullptr;
    uint64_t va = 0;
    uint32_t dma_len = 0;
};

// A READ being answered: responses are produced a window at a time by the transmitter.
struct ReadJob {
    uint32_t psn = 0;  // PSN of the next response
    uint32_t first_psn = 0;
    uint32_t npkts = 0;
    uint32_t done = 0;  // responses sent
    const uint8_t* src = nullptr;
    uint32_t length = 0;
};

struct AtomicReplay {
    uint32_t psn = 0;
    bool valid = false;
    uint64_t original = 0;
};

struct Qp {
    ibv_qp_ex qpx{};  // must be first: ibv_qp is its first member
    Context* ctx = nullptr;
    Pd* pd = nullptr;
    Cq* send_cq = nullptr;
    Cq* recv_cq = nullptr;
    Srq* srq = nullptr;
    ibv_qp_type type = IBV_QPT_RC;
    bool sq_sig_all = false;
    ibv_qp_cap cap{};

    // Attributes from modify_qp.
    ibv_qp_state state = IBV_QPS_RESET;
    uint32_t dest_qpn = 0;
    uint32_t remote_ipv4 = 0;
    ibv_ah_attr ah_attr{};
    ibv_mtu path_mtu = IBV_MTU_1024;
    uint32_t mtu = 1024;
    uint32_t qkey = 0;
    uint16_t pkey_index = 0;
    unsigned access = 0;
    uint8_t timeout = 14;
    uint8_t retry_cnt = 7;
    uint8_t rnr_retry = 7;
    uint8_t min_rnr_timer = 12;
    uint8_t max_rd_atomic = 1;
    uint8_t max_dest_rd_atomic = 1;
    uint32_t sq_psn = 0;
    uint32_t rq_psn = 0;
    uint16_t src_port = 4791;
    int tx_fd = -1;  // per-QP source port socket (SOFTVERBS_SPORT=per_qp), else -1

    // Send queue and requester state (context lock).
    Ring<SendWqe> sq;
    std::size_t send_next = 0;  // sq index (relative to the tail) of the WQE being sent
    uint32_t send_pkt = 0;      // next packet of that WQE
    uint32_t psn_next = 0;      // next new PSN to send
    uint32_t psn_una = 0;       // oldest unacknowledged PSN
    uint32_t reads_outstanding = 0;
    uint64_t deadline_ns = 0;  // retransmission timer, 0 = stopped
    uint64_t resume_ns = 0;    // RNR wait: no transmission before this
    uint32_t retries = 0;
    bool peer_heard = false;  // a packet from the peer arrived since the last timeout
    uint32_t rnr_retries = 0;
    uint32_t read_rewind_psn = 0;  // last PSN a READ gap rewound to (one rewind per gap)
    bool read_rewound = false;

    // Receive queue and responder state.
    Ring<RecvWqe> rq;
    uint32_t epsn = 0;
    uint32_t msn = 0;
    bool nak_sent = false;
    bool ack_pending = false;
    bool cnp_pending = false;
    InboundMessage in;
    Ring<ReadJob> reads;
    std::array<AtomicReplay, kAtomicReplay> atomic_replay{};
    uint32_t atomic_replay_next = 0;

    // ibv_qp_ex batch being built between wr_start and wr_complete.
    std::vector<ibv_send_wr> batch;
    std::vector<std::array<ibv_sge, kMaxSendSge>> batch_sge;
    std::vector<std::array<uint8_t, kMaxInline>> batch_inline;
    int batch_error = 0;

    // Statistics (read under the context lock).
    uint64_t retransmitted = 0;
    uint64_t timeouts = 0;
    uint64_t naks_received = 0;
    uint64_t cnps_received = 0;

    bool active = false;  // in the engine's list of QPs with transmit work
};

inline Device* to_device(ibv_device* d) {
    return reinterpret_cast<Device*>(d);
}
inline Pd* to_pd(ibv_pd* p) {
    return reinterpret_cast<Pd*>(p);
}
inline Mr* to_mr(ibv_mr* m) {
    return reinterpret_cast<Mr*>(m);
}
inline Cq* to_cq(ibv_cq* c) {
    return reinterpret_cast<Cq*>(c);
}
inline Ah* to_ah(ibv_ah* a) {
    return reinterpret_cast<Ah*>(a);
}
inline Srq* to_srq(ibv_srq* s) {
    return reinterpret_cast<Srq*>(s);
}
inline Qp* to_qp(ibv_qp* q) {
    return reinterpret_cast<Qp*>(q);
}
inline Qp* to_qp(ibv_qp_ex* q) {
    return reinterpret_cast<Qp*>(q);
}
inline CompChannel* to_channel(ibv_comp_channel* c) {
    return reinterpret_cast<CompChannel*>(c);
}

static_assert(offsetof(Qp, qpx) == 0 && offsetof(ibv_qp_ex, qp_base) == 0,
              "ibv_qp* must convert to Qp* by address");
static_assert(offsetof(Cq, cq) == 0 && offsetof(Mr, mr) == 0 && offsetof(Device, dev) == 0,
              "handles must convert to provider objects by address");

}  // namespace insert::softverbs
