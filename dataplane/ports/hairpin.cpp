#include "dataplane/ports/hairpin.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>

namespace insert::ports {

bool hairpin_capable(uint16_t port) {
    rte_eth_hairpin_cap cap{};
    if (rte_eth_dev_hairpin_capability_get(port, &cap) != 0) return false;
    // One queue each way, and queues that can peer with another port's (rx_cap /
    // tx_cap .locked_device_memory etc. do not matter here).
    return cap.max_nb_queues >= 1 && cap.max_rx_2_tx >= 1 && cap.max_tx_2_rx >= 1;
}

bool setup_hairpin_queues(uint16_t port, uint16_t peer, uint16_t queue, std::string& error) {
    rte_eth_hairpin_conf conf{};
    conf.peer_count = 1;
    conf.peers[0].port = peer;
    conf.peers[0].queue = queue;
    // Two ports: the queues are bound explicitly once both ports run (bind_hairpin), and
    // the Tx side is driven by the flow rules, not by an implicit flow.
    conf.manual_bind = 1;
    conf.tx_explicit = 1;
    int rc = rte_eth_rx_hairpin_queue_setup(port, queue, 0, &conf);  // 0: the PMD's default size
    if (rc != 0) {
        error = "hairpin Rx queue " + std::to_string(queue) + ": " + rte_strerror(-rc);
        return false;
    }
    rc = rte_eth_tx_hairpin_queue_setup(port, queue, 0, &conf);
    if (rc != 0) {
        error = "hairpin Tx queue " + std::to_string(queue) + ": " + rte_strerror(-rc);
        return false;
    }
    return true;
}

bool bind_hairpin(uint16_t a, uint16_t b, std::string& error) {
    int rc = rte_eth_hairpin_bind(a, b);
    if (rc == 0) rc = rte_eth_hairpin_bind(b, a);
    if (rc != 0) {
        rte_eth_hairpin_unbind(a, b);
        rte_eth_hairpin_unbind(b, a);
        error = "hairpin bind: " + std::string(rte_strerror(-rc));
        return false;
    }
    return true;
}

}  // namespace insert::ports
