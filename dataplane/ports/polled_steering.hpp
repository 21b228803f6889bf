// The modes where workers poll ports themselves (hardware, direct): a worker's rx_burst
// polls its lane's Rx queues, keeps what is for it (keep()), and flushes its Tx buffers
// when the ports run dry or the run stops.
#pragma once

#include "dataplane/ports/steering.hpp"

namespace insert::ports {

class PolledSteering : public Steering {
  public:
    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    // The worker's engine finishes with end_ns(), set once run() returns.
    bool drained(unsigned q) const noexcept override {
        return lane(q).finished.load(std::memory_order_acquire) && done();
    }

  protected:
    using Steering::Steering;
    // Of the `n` frames polled into `pkts`, keeps those for the worker, in order, at the
    // front, and returns their count; the rest it forwards or frees.
    virtual uint16_t keep(Lane& lane, rte_mbuf** pkts, uint16_t n) noexcept = 0;
};

inline uint16_t PolledSteering::rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    Lane& l = lane(q);
    if (stopping()) {
        l.flush();
        l.finished.store(true, std::memory_order_release);
        return 0;
    }
    n = std::min(n, PortSet::kBurst);  // keep() may hold one burst aside
    for (;;) {
        const uint16_t raw = poll(l, l.rx, pkts, n);
        if (raw == 0) {
            l.flush();
            return 0;
        }
        const uint16_t got = keep(l, pkts, raw);
        l.maybe_flush();
        // Only passthrough this time: poll again rather than report an empty queue, which
        // would send the worker into its idle back-off while traffic flows.
        if (got != 0 || stopping()) return got;
    }
}

}  // namespace insert::ports
