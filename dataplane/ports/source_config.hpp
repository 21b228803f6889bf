// What a live run asks of its ports, and the ways frames can reach the workers.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/shard.hpp"

namespace insert::ports {

enum class PortMode : uint8_t {
    inline_pair,  // two ports: every frame received on one leaves on the other
    monitor,      // receive-only ports (mirror/SPAN): frames are freed after processing
};

// How frames reach the workers, decided per run at start (steering.hpp).
enum class SteerMode : uint8_t { hardware, direct, dispatch };

struct PortSourceConfig {
    PortMode mode = PortMode::inline_pair;
    std::vector<std::string> devices;  // EAL device names (vdev names or PCI addresses), in order
    unsigned workers = 1;
    offload::OffloadMode offload = offload::OffloadMode::automatic;
    pipeline::ShardPolicy policy = pipeline::ShardPolicy::ip_pair;  // --offload off, N workers
    uint16_t rx_desc = 1024;
    uint16_t tx_desc = 1024;
    uint32_t mbuf_data_room = RTE_MBUF_DEFAULT_BUF_SIZE;
    uint32_t max_frame = 1518;    // largest frame that must cross (checked per port)
    unsigned worker_ring = 1024;  // dispatch mode, per worker (power of two)
    bool promiscuous = true;
    bool hairpin = true;  // inline: hairpin non-observed frames where both ports can
};

}  // namespace insert::ports
