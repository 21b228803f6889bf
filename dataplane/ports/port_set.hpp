// Port bring-up: the mbuf pool and every ethdev port of a live run, configured and started
// (queues, RSS, MTU, Rx timestamps, hairpin), with each port's clock when it stamps frames
// in device ticks. Stopped and closed, and the pool freed, when the set goes; every mbuf
// must be back by then.
#pragma once

#include <rte_mempool.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/ports/source_config.hpp"

namespace insert::ports {

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

// The clock frames are stamped with where no port stamps them: CLOCK_REALTIME, the clock
// insert-trace's `wall_ns` is on (docs/live.md "Time").
uint64_t realtime_ns() noexcept;

class PortSet {
  public:
    // Burst size of every port loop, and what per-lane buffers hold.
    static constexpr uint16_t kBurst = 32;
    // Opens every device of `config`: one queue pair per worker plus one for the main lcore
    // (or one pair in all where a port has no more: single_tx()). nullptr and a one-line
    // `error` when a port is missing or refuses its set-up.
    static std::unique_ptr<PortSet> open(const PortSourceConfig& config, std::string& error);
    ~PortSet();
    PortSet(const PortSet&) = delete;
    PortSet& operator=(const PortSet&) = delete;

    const std::vector<PortInfo>& ports() const { return ports_; }
    std::size_t size() const { return ports_.size(); }
    // Index in ports() of an ethdev port id; -1 when the port is not ours.
    int index(uint16_t port_id) const { return index_[port_id]; }
    // Where frames received on `port_id` leave (UINT16_MAX: nowhere, monitor).
    uint16_t peer(uint16_t port_id) const {
        const int i = index_[port_id];
        return i >= 0 ? ports_[i].peer : UINT16_MAX;
    }
    // A port has a single queue pair (af_packet): one lcore transmits for every lane.
    bool single_tx() const { return single_tx_; }
    bool any_hw_timestamp() const;
    // A timestamp in device ticks of `port_id` as ns on realtime_ns()'s clock.
    uint64_t device_ns(uint16_t port_id, uint64_t ticks) const {
        const HwClock& c = hw_clock_[port_id];
        const int64_t d = static_cast<int64_t>(ticks - c.tick_base);
        return c.ns_base + static_cast<uint64_t>(static_cast<double>(d) * c.ns_per_tick);
    }
    bool hw_timestamp(uint16_t port_id) const {
        const int i = index_[port_id];
        return i >= 0 && ports_[i].hw_timestamp;
    }
    rte_mempool* pool() const { return pool_; }

  private:
    PortSet() = default;
    bool create_pool(const PortSourceConfig& config, std::string& error);
    bool open_port(const PortSourceConfig& config, unsigned index, std::string& error);
    void calibrate_clock(PortInfo& port);

    rte_mempool* pool_ = nullptr;
    std::vector<PortInfo> ports_;
    std::vector<int> index_;         // port id -> index in ports_ (-1: not ours)
    std::vector<HwClock> hw_clock_;  // by port id, for ports with Rx timestamps
    bool single_tx_ = false;
};

}  // namespace insert::ports
