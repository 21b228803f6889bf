// Live packet source over ethdev ports (af_packet, tap, null, ring, pcap vdevs or PCI NICs):
// the PacketSource the inline and monitor modes hand to the unchanged replay pipeline.
//
//   inline:  two ports; every frame received on one leaves on the other, processed or not.
//   monitor: receive-only ports (mirror/SPAN); frames are freed after processing.
//
// How frames reach the workers, decided per run at start:
//   hardware   every port took the rte_flow plan (flow_rules.hpp): RoCE is spread by the
//              NIC's symmetric RSS over Rx queues 0..N-1, one per worker, each polled by its
//              worker; the rest lands on queue N, which the main lcore forwards.
//   direct     one worker and no hardware plan: the worker polls every queue itself (and
//              applies the emulated plan inline when there is one) - no extra hop.
//   dispatch   N workers, no hardware plan: the main lcore polls every queue, steers each
//              frame by the emulated plan (or, with --offload off, by the replay's software
//              RSS) into one SPSC ring per worker, and forwards passthrough frames itself.
// Ports with one queue pair (af_packet: a single socket keeps Rx in wire order; the PMD's
// fan-out over several sockets would reorder the two directions of a connection) have one
// transmitting lcore: in dispatch mode the workers hand processed frames back to the main
// lcore through per-worker rings. Otherwise every lcore that transmits owns Tx queue `lane` of
// every port and buffers per port, flushing when a burst fills, when its input runs dry, or after
// kTxDrainUs; a full Tx queue is retried a bounded number of times (back-pressure) and what still
// does not fit is counted as dropped. Timestamps: the NIC's Rx timestamp where the port offers one
// (converted to ns with the device clock), else the TSC once per burst, as ns since the epoch.
#pragma once

#include <rte_ethdev.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/pipeline/shard.hpp"

namespace insert::pipeline {

enum class PortMode : uint8_t { inline_pair, monitor };
enum class SteerMode : uint8_t { hardware, direct, dispatch };

struct PortSourceConfig {
    PortMode mode = PortMode::inline_pair;
    std::vector<std::string> devices;  // EAL device names (vdev names or PCI addresses), in order
    unsigned workers = 1;
    offload::OffloadMode offload = offload::OffloadMode::automatic;
    ShardPolicy policy = ShardPolicy::ip_pair;  // --offload off with several workers
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    uint32_t mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
    uint32_t max_frame = 1518;    // largest frame that must cross (checked per port)
    unsigned worker_ring = 1024;  // dispatch mode, per worker (power of two)
    bool promiscuous = true;
    bool hairpin = true;  // inline: hairpin non-observed frames where both ports can
};

// Counters of one transmitting lcore (a lane); single writer, relaxed readers.
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

struct PortInfo {
    uint16_t id = 0;
    std::string name;
    std::string driver;
    uint16_t peer = UINT16_MAX;  // inline: where its frames leave
    uint16_t queues = 1;         // Rx = Tx queues configured (hairpin queue not included)
    bool hw_timestamp = false;
    bool hairpin = false;  // a hairpin queue pair at index `queues`, peered with `peer`
};

// Device clock -> ns, for a port whose Rx timestamps are in device ticks.
struct HwClock {
    uint64_t tick_base = 0;
    uint64_t ns_base = 0;
    double ns_per_tick = 0;
};

class PortSource final : public PacketSource {
  public:
    struct Lane;  // one transmitting lcore (defined in port_source.cpp)

    // Configures and starts every port, installs (or emulates) the offload plan. nullptr
    // and a one-line `error` when a port is missing, refuses the set-up, or the plan is
    // required and refused.
    static std::unique_ptr<PortSource> create(const PortSourceConfig& config,
                                              const MbufTimestamp& timestamp, std::string& error);
    ~PortSource() override;

    unsigned queues() const override { return workers_; }
    uint64_t burst_time_ns(unsigned q) noexcept override;
    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    bool drained(unsigned q) const noexcept override;
    bool run(std::string& error) override;
    void stop() noexcept override { stop_.store(true, std::memory_order_relaxed); }
    uint64_t end_ns() const noexcept override { return end_ns_.load(std::memory_order_acquire); }
    SourceProgress progress() const noexcept override;

    // Stats, from any thread.
    SteerMode steer() const { return steer_; }
    const std::vector<PortInfo>& ports() const { return ports_; }
    const offload::OffloadState& offload(unsigned port_index) const {
        return *offload_[port_index];
    }
    unsigned lanes() const { return static_cast<unsigned>(lanes_.size()); }
    const LaneCounters& lane(unsigned i) const;
    // Frames the source took from the ports and frames it forwarded without a worker.
    uint64_t received() const;
    uint64_t passthrough() const;
    // Current clock as the source stamps packets (ns since the epoch).
    uint64_t now_ns() const noexcept;

  private:
    PortSource() = default;
    struct RxQueue {
        uint16_t port;
        uint16_t queue;
    };
    bool setup_port(unsigned index, const std::string& device, std::string& error);
    uint16_t poll(Lane& lane, const std::vector<RxQueue>& from, rte_mbuf** pkts,
                  uint16_t n) noexcept;
    void stamp(rte_mbuf** pkts, uint16_t n, uint16_t port, uint64_t now) noexcept;
    // Frames to their ports' peers: one tx_burst when they all came from one port and
    // nothing is buffered for its peer, else through the Tx buffers (monitor: freed).
    void send(Lane& lane, rte_mbuf** pkts, uint16_t n) noexcept;
    void forward(Lane& lane, rte_mbuf* m) noexcept;
    void flush(Lane& lane) noexcept;
    void maybe_flush(Lane& lane) noexcept;
    uint16_t steer_emulated(Lane& lane, rte_mbuf** pkts, uint16_t n, unsigned port_index) noexcept;
    bool dispatch_loop();

    PortSourceConfig config_;
    MbufTimestamp timestamp_;
    SteerMode steer_ = SteerMode::dispatch;
    // Per-mbuf timestamps are needed where frames change lcore before the worker sees them
    // (dispatch) or carry a NIC timestamp; otherwise a worker lane reads the clock once for
    // the whole burst (burst_time_ns), when its first RoCE frame needs it, and no mbuf's
    // second cache line is written. (A TSC read costs ~18 ns on these VMs: once per poll
    // it was 0.6 ns of every frame's budget, for bursts that mostly need no time at all.)
    bool stamp_mbufs_ = true;
    bool any_emulated_ = false;  // some port applies its plan in software (steer_emulated)
    unsigned workers_ = 1;
    rte_mempool* pool_ = nullptr;
    std::vector<PortInfo> ports_;
    std::vector<int> port_index_;  // port id -> index in ports_ (-1: not ours)
    std::vector<std::unique_ptr<offload::OffloadState>> offload_;
    std::vector<std::unique_ptr<Lane>> lanes_;  // 0..N-1 workers, N the main lcore
    std::vector<rte_ring*> rings_;              // dispatch mode
    std::vector<rte_ring*> back_;               // dispatch, single_tx_: worker -> main
    bool single_tx_ = false;                    // a port has one queue pair: one transmitter
    std::vector<RxQueue> all_rx_;               // every (port, queue)
    std::vector<RxQueue> pass_rx_;              // hardware mode: the passthrough queues
    std::vector<HwClock> hw_clock_;             // by port id, for ports with Rx timestamps
    uint64_t drain_tsc_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<bool> done_{false};
    std::atomic<uint64_t> end_ns_{0};
    bool started_ = false;
};

}  // namespace insert::pipeline
