// The progress engine of one context: a thread that owns the context's UDP socket
// (device IP, port 4791), receives and dispatches RoCEv2 packets, runs the requester and
// responder state machines and their timers, and sends in batches. Verbs calls only queue
// work and ring the doorbell.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/proto/headers.hpp"
#include "hosttrace/softverbs/fault.hpp"
#include "hosttrace/softverbs/limits.hpp"

namespace insert::softverbs {

struct Context;
struct Qp;

// Where a packet's payload comes from: up to kMaxSendSge host ranges, read in order.
struct Gather {
    uint32_t count = 0;
    struct Range {
        const uint8_t* ptr;
        uint32_t len;
    } ranges[kMaxSendSge];
    uint32_t total() const {
        uint32_t n = 0;
        for (uint32_t i = 0; i < count; ++i) n += ranges[i].len;
        return n;
    }
};

struct EngineCounters {
    uint64_t tx_pkts = 0;
    uint64_t rx_pkts = 0;
    uint64_t rx_bad_icrc = 0;
    uint64_t rx_malformed = 0;
    uint64_t rx_unknown_qp = 0;
    uint64_t rx_wrong_state = 0;
    uint64_t tx_errors = 0;
    uint64_t injected_drops = 0;
    uint64_t injected_ecn = 0;
    uint64_t rx_ecn_ce = 0;
    uint64_t cnps_sent = 0;
};

class Engine {
  public:
    explicit Engine(Context& ctx);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Binds the socket and starts the thread; returns 0 or an errno value and a message.
    int start(std::string& error);
    void stop();
    // Wakes the thread when it sleeps; cheap when it does not (no syscall).
    void kick();
    // One engine iteration on the caller's thread, unless another thread is running one.
    // poll_cq and post_send call it, so a busy-polling application moves its own packets
    // without waiting for the engine thread to be scheduled.
    // Returns false when it did not run.
    bool progress();

    // Called with the context lock held, from the engine thread only.
    // Builds one packet to `dst_ipv4` from `qp` and queues it for sending.
    void emit(Qp& qp, uint32_t dst_ipv4, proto::TransportHeaders& t, const Gather& payload);
    uint64_t now_ns() const { return now_ns_; }
    EngineCounters& counters() { return counters_; }
    int socket_fd() const { return fd_; }

  private:
    void run();
    bool iterate(int& received);  // run_lock_ held
    void receive_batch(int& received);
    void dispatch(uint8_t* frame, uint32_t udp_payload_len, const sockaddr_in& from, uint8_t tos);
    bool service_qps();  // returns true when some QP still has work it could do now
    uint64_t next_deadline();
    void queue_frame(int fd, const uint8_t* frame, uint32_t frame_len, uint32_t dst_ipv4,
                     uint8_t tos);
    void flush();
    void release_held(bool all);
    void sleep_until_work(uint64_t deadline_ns);

    Context& ctx_;
    int fd_ = -1;
    int doorbell_fd_ = -1;
    std::thread thread_;
    std::mutex run_lock_;  // engine-private buffers: one iteration at a time
    std::atomic<bool> stop_{false};
    std::atomic<bool> sleeping_{false};
    std::atomic<bool> work_pending_{false};
    static_assert(std::atomic<bool>::is_always_lock_free);
    uint64_t now_ns_ = 0;
    EngineCounters counters_;
    FaultInjector faults_;

    // Transmit batch: frames built in place, sent from their UDP payload.
    struct TxSlot {
        int fd;
        uint32_t len;  // UDP payload length
        uint32_t dst_ipv4;
        uint8_t tos;
        alignas(64) uint8_t frame[kFrameBufSize];
    };
    std::vector<TxSlot> tx_;
    uint32_t tx_count_ = 0;
    // Packets held back by reorder/delay injection.
    struct Held {
        uint64_t due_ns;  // 0: release after the next packet (reorder)
        TxSlot slot;
    };
    std::vector<Held> held_;
    uint32_t held_count_ = 0;

    // Receive batch.
    std::vector<std::array<uint8_t, kFrameBufSize>> rx_bufs_;
    uint8_t scratch_[kMaxUdpPayload];  // gathers multi-SGE payloads
};

}  // namespace insert::softverbs
