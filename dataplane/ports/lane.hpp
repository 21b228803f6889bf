// A lane: one lcore's share of the ports. Every lcore that transmits (a worker handing
// processed frames on, or the main lcore forwarding passthrough frames) owns Tx queue
// `tx_queue` of every port and buffers per port, flushing when a burst fills, when its input
// runs dry (flush) or after kTxDrainUs (maybe_flush); a full Tx queue is retried a bounded
// number of times (back-pressure) and what still does not fit is counted as dropped. Ports
// with a single queue pair have one transmitting lcore, whose lane every other one hands
// its frames to (dispatch steering). A lane also keeps its lcore's Rx position and time.
#pragma once

#include <rte_ethdev.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/common/counter.hpp"
#include "dataplane/ports/port_set.hpp"

namespace insert::ports {

// Counters of one lane; single writer, relaxed readers.
struct alignas(RTE_CACHE_LINE_SIZE) LaneCounters {
    std::atomic<uint64_t> rx{0};            // frames this lane took from ports (direct/hardware)
    std::atomic<uint64_t> tx{0};            // frames handed to Tx queues
    std::atomic<uint64_t> tx_retries{0};    // Tx queue full: retried (back-pressure)
    std::atomic<uint64_t> tx_dropped{0};    // still full after the retries: freed, counted
    std::atomic<uint64_t> passthrough{0};   // frames forwarded without a worker (non-RoCE)
    std::atomic<uint64_t> dropped_rule{0};  // frames a DROP rule discarded
    std::atomic<uint64_t> ring_waits{0};    // dispatch: a worker ring was full
    std::atomic<uint64_t> ring_dropped{0};  // dispatch: frames freed at stop with rings full
};

using common::bump;  // each lane's lcore is its counters' single writer

// An Rx queue of a port, as the lanes poll them.
struct RxQueue {
    uint16_t port;
    uint16_t queue;
};

class Lane {
  public:
    // The Tx buffers of lane `index` on every port of `ports`; nullptr and `error` when
    // DPDK memory is short.
    static std::unique_ptr<Lane> create(unsigned index, const PortSet& ports, std::string& error);
    ~Lane();
    Lane(const Lane&) = delete;
    Lane& operator=(const Lane&) = delete;

    // Frames to their ports' peers: one tx_burst when they all came from one port and
    // nothing is buffered for its peer, else through the Tx buffers (monitor: freed).
    void send(rte_mbuf** pkts, uint16_t n) noexcept;
    // One frame to its port's peer, buffered (monitor: freed).
    void forward(rte_mbuf* m) noexcept;
    // Everything buffered out now (the input ran dry, or the run stops).
    void flush() noexcept;
    // flush() once kTxDrainUs passed since the last one.
    void maybe_flush() noexcept;

    unsigned index() const { return index_; }
    LaneCounters counters;
    // Rx side, for the steering that polls ports on this lane's lcore.
    std::vector<RxQueue> rx;            // what this lane polls (hardware: its queue of every port)
    unsigned next_rx = 0;               // round-robin start
    uint64_t burst_ns = 0;              // time of the last poll, once asked for; 0: not yet
    std::atomic<bool> finished{false};  // this lcore will neither receive nor send again

  private:
    Lane(unsigned index, const PortSet& ports);
    static void on_tx_full(rte_mbuf** unsent, uint16_t count, void* userdata);

    struct ErrorContext {
        Lane* lane;
        uint16_t port;
    };
    unsigned index_;
    uint16_t tx_queue_;  // the Tx queue it owns on every port (= index unless single_tx)
    const PortSet& ports_;
    std::vector<rte_eth_dev_tx_buffer*> tx_;  // by port index: frames bound for that port
    std::vector<ErrorContext> error_context_;
    uint64_t drain_tsc_;
    uint64_t last_flush_ = 0;
    unsigned unflushed_ = 0;
};

}  // namespace insert::ports
