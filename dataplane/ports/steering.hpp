// How frames reach the workers, decided per run at start (PortSource::create):
//   hardware   every port took the rte_flow plan (flow_rules.hpp): RoCE is spread by the
//              NIC's symmetric RSS over Rx queues 0..N-1, one per worker, each polled by its
//              worker; the rest lands on queue N, which the main lcore forwards.
//   direct     one worker and no hardware plan: the worker polls every queue itself (and
//              applies the emulated plan inline when there is one) - no extra hop.
//   dispatch   N workers, no hardware plan: the main lcore polls every queue, steers each
//              frame by the emulated plan (or, with --offload off, by the replay's software
//              RSS) into one SPSC ring per worker, and forwards passthrough frames itself.
// One implementation per mode (steer_*.cpp) behind this interface, which PortSource's
// PacketSource methods call.
//
// Timestamps: the NIC's Rx timestamp where the port offers one (converted to ns with the
// device clock), else CLOCK_REALTIME once per burst.
#pragma once

#include <rte_mbuf.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/ports/lane.hpp"
#include "dataplane/ports/port_set.hpp"
#include "dataplane/ports/source_config.hpp"

namespace insert::ports {

using OffloadPlans = std::vector<std::unique_ptr<offload::OffloadState>>;

class Steering {
  public:
    // What every mode works with; all of it outlives the steering.
    struct Context {
        const PortSourceConfig& config;
        const PortSet& ports;
        // 0..N-1 the workers', N the main lcore's.
        const std::vector<std::unique_ptr<Lane>>& lanes;
        const OffloadPlans& plans;
        pipeline::MbufTimestamp timestamp;
    };
    virtual ~Steering() = default;
    Steering(const Steering&) = delete;
    Steering& operator=(const Steering&) = delete;

    virtual SteerMode mode() const = 0;

    // Worker q's side (PacketSource::rx_burst, release, drained, burst_time_ns).
    virtual uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept = 0;
    // Processed frames go on to the other port (monitor: freed).
    virtual void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept;
    virtual bool drained(unsigned q) const noexcept = 0;
    uint64_t burst_time_ns(unsigned q) noexcept;

    // The main lcore's side (PacketSource::run, stop, end_ns): forwards, dispatches or
    // waits until stop(), then sets end_ns().
    void run();
    void stop() noexcept { stop_.store(true, std::memory_order_relaxed); }
    uint64_t end_ns() const noexcept { return end_ns_.load(std::memory_order_acquire); }

  protected:
    // `stamp_mbufs`: every frame gets its time in its mbuf (frames change lcore before a
    // worker sees them, or carry a NIC timestamp); otherwise a worker reads the clock once
    // for the whole burst (burst_time_ns), when its first RoCE frame needs it, and no
    // mbuf's second cache line is written. (A clock read costs ~20 ns: once per poll it was
    // a noticeable share of every frame's budget, for bursts that mostly need no time.)
    Steering(const Context& context, bool stamp_mbufs);
    virtual void main_loop() = 0;
    // Up to n frames from `from`, round-robin from the lane's last start, stamped.
    uint16_t poll(Lane& lane, const std::vector<RxQueue>& from, rte_mbuf** pkts,
                  uint16_t n) noexcept;
    bool stopping() const noexcept { return stop_.load(std::memory_order_relaxed); }
    void finish(uint64_t end_ns) noexcept {
        end_ns_.store(end_ns, std::memory_order_release);
        done_.store(true, std::memory_order_release);
    }
    bool done() const noexcept { return done_.load(std::memory_order_acquire); }
    Lane& lane(unsigned i) const { return *context_.lanes[i]; }
    Lane& main_lane() const { return *context_.lanes[workers_]; }

    const Context context_;
    const unsigned workers_;
    const bool stamp_mbufs_;

  private:
    void stamp(rte_mbuf** pkts, uint16_t n, uint16_t port, uint64_t now) noexcept;
    std::atomic<bool> stop_{false};
    std::atomic<bool> done_{false};
    std::atomic<uint64_t> end_ns_{0};
};

// The three modes (steer_hardware.cpp, steer_direct.cpp, steer_dispatch.cpp). The worker
// lanes' Rx lists are set here; dispatch allocates its rings (nullptr and `error` when
// DPDK memory is short).
std::unique_ptr<Steering> hardware_steering(const Steering::Context& context);
std::unique_ptr<Steering> direct_steering(const Steering::Context& context);
std::unique_ptr<Steering> dispatch_steering(const Steering::Context& context, std::string& error);

}  // namespace insert::ports
