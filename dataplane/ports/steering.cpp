#include "dataplane/ports/steering.hpp"

namespace insert::ports {

Steering::Steering(const Context& context, bool stamp_mbufs)
    : context_(context),
      workers_(context.config.workers),
      stamp_mbufs_(stamp_mbufs || context.ports.any_hw_timestamp()) {}

void Steering::stamp(rte_mbuf** pkts, uint16_t n, uint16_t port, uint64_t now) noexcept {
    if (!stamp_mbufs_) {
        for (uint16_t i = 0; i < n; ++i) pkts[i]->port = port;  // see below
        return;
    }
    const pipeline::MbufTimestamp& ts = context_.timestamp;
    const bool hw = context_.ports.hw_timestamp(port);
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        m->port = port;  // not every PMD sets it (net_ring); release() routes by it
        if (hw && (m->ol_flags & ts.rx_flag))
            ts.set(m, context_.ports.device_ns(port, ts.get(m)));
        else
            ts.set(m, now);
    }
}

uint16_t Steering::poll(Lane& lane, const std::vector<RxQueue>& from, rte_mbuf** pkts,
                        uint16_t n) noexcept {
    uint16_t got = 0;
    uint64_t now = 0;  // read once, for the first frames that carry it in their mbuf
    lane.burst_ns = 0;
    const unsigned k = static_cast<unsigned>(from.size());
    for (unsigned i = 0; i < k && got < n; ++i) {
        const RxQueue& rq = from[(lane.next_rx + i) % k];
        const uint16_t r = rte_eth_rx_burst(rq.port, rq.queue, pkts + got, n - got);
        if (r) {
            if (stamp_mbufs_ && now == 0) now = realtime_ns();
            stamp(pkts + got, r, rq.port, now);
        }
        got += r;
    }
    lane.next_rx = k ? (lane.next_rx + 1) % k : 0;
    if (got) bump(lane.counters.rx, got);
    return got;
}

uint64_t Steering::burst_time_ns(unsigned q) noexcept {
    if (stamp_mbufs_) return 0;
    Lane& l = lane(q);
    if (l.burst_ns == 0) l.burst_ns = realtime_ns();
    return l.burst_ns;
}

void Steering::release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    if (context_.config.mode == PortMode::monitor) {
        rte_pktmbuf_free_bulk(pkts, n);
        return;
    }
    Lane& l = lane(q);
    bump(l.counters.tx, n);
    l.send(pkts, n);
}

void Steering::run() {
    main_loop();
    if (!done()) finish(realtime_ns());
}

}  // namespace insert::ports
