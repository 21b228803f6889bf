// Live packet source over ethdev ports (af_packet, tap, null, ring, pcap vdevs or PCI NICs):
// the PacketSource the inline and monitor modes hand to the unchanged replay pipeline.
//
//   inline:  two ports; every frame received on one leaves on the other, processed or not.
//   monitor: receive-only ports (mirror/SPAN); frames are freed after processing.
//
// Made of: the ports brought up (port_set.hpp), the offload plan per port (dataplane/
// offload), one lane per lcore that transmits (lane.hpp), and the steering mode that gets
// frames to the workers (steering.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/ports/lane.hpp"
#include "dataplane/ports/port_set.hpp"
#include "dataplane/ports/source_config.hpp"
#include "dataplane/ports/steering.hpp"

namespace insert::ports {

class PortSource final : public pipeline::PacketSource {
  public:
    // Configures and starts every port, installs (or emulates) the offload plan. nullptr
    // and a one-line `error` when a port is missing, refuses the set-up, or the plan is
    // required and refused.
    static std::unique_ptr<PortSource> create(const PortSourceConfig& config,
                                              const pipeline::MbufTimestamp& timestamp,
                                              std::string& error);
    ~PortSource() override;

    unsigned queues() const override { return config_.workers; }
    uint64_t burst_time_ns(unsigned q) noexcept override { return steering_->burst_time_ns(q); }
    uint64_t quiet_time_ns(unsigned) noexcept override { return realtime_ns(); }
    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override {
        return steering_->rx_burst(q, pkts, n);
    }
    void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override {
        steering_->release(q, pkts, n);
    }
    bool drained(unsigned q) const noexcept override { return steering_->drained(q); }
    bool run(std::string&) override {
        steering_->run();
        return true;
    }
    void stop() noexcept override { steering_->stop(); }
    uint64_t end_ns() const noexcept override { return steering_->end_ns(); }
    pipeline::SourceProgress progress() const noexcept override;

    // Stats, from any thread.
    SteerMode steer() const { return steering_->mode(); }
    const std::vector<PortInfo>& ports() const { return ports_->ports(); }
    const offload::OffloadState& offload(unsigned port_index) const {
        return *offload_[port_index];
    }
    unsigned lanes() const { return static_cast<unsigned>(lanes_.size()); }
    const LaneCounters& lane(unsigned i) const { return lanes_[i]->counters; }
    // Frames the source took from the ports and frames it forwarded without a worker.
    uint64_t received() const;
    uint64_t passthrough() const;
    // Current clock as the source stamps packets (ns since the epoch).
    uint64_t now_ns() const noexcept { return realtime_ns(); }

  private:
    PortSource() = default;
    bool install_offload(std::string& error);
    SteerMode choose_steering() const;
    bool create_lanes(std::string& error);

    PortSourceConfig config_;
    std::unique_ptr<PortSet> ports_;
    OffloadPlans offload_;                      // by port index
    std::vector<std::unique_ptr<Lane>> lanes_;  // 0..N-1 workers, N the main lcore
    std::unique_ptr<Steering> steering_;
};

}  // namespace insert::ports
