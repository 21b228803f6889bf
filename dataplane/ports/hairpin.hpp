// Hardware hairpin for the inline mode: on NICs that can forward a queue's frames from
// one port's Rx to the other port's Tx inside the NIC (mlx5: ConnectX, BlueField), the
// frames INSERT does not observe never reach the CPU. The passthrough rule then points
// at the hairpin queue instead of the software passthrough queue (offload::
// build_insert_rules); without hairpin, or when any step here fails, the software
// passthrough queue does the same job.
#pragma once

#include <cstdint>
#include <string>

namespace insert::ports {

// Whether `port` can hairpin to another port (peer-to-peer hairpin with manual binding).
bool hairpin_capable(uint16_t port);

// Sets up one hairpin Rx and one hairpin Tx queue, both at index `queue`, peered with the
// same queues of `peer`: frames steered to the Rx queue leave through `peer`'s Tx, and
// `peer`'s hairpin Rx frames leave through this port. Call between rte_eth_dev_configure
// (which must count the extra queue) and rte_eth_dev_start, on both ports.
bool setup_hairpin_queues(uint16_t port, uint16_t peer, uint16_t queue, std::string& error);

// After both ports started: binds each port's hairpin Tx queue to the other's Rx queue.
bool bind_hairpin(uint16_t a, uint16_t b, std::string& error);

}  // namespace insert::ports
