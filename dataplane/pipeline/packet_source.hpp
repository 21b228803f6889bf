// Where the workers' packets come from. Workers see only numbered queues of mbufs with a
// timestamp in the Rx timestamp dynfield (mbuf_timestamp.hpp), exactly what an ethdev Rx
// queue with symmetric RSS gives; so the worker loop, the engine and the exporter do not
// know whether packets come from a capture file (FileSource: a reader lcore feeding one
// software ring per worker, the emulated NIC RSS) or from ports (the live modes).
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <string>

namespace insert::pipeline {

struct SourceProgress {
    uint64_t frames = 0;   // frames handed to workers so far
    double fraction = -1;  // of the input consumed, 0..1; negative when unbounded (live)
};

class PacketSource {
  public:
    virtual ~PacketSource() = default;

    virtual unsigned queues() const = 0;
    // Up to `n` packets of queue `q`; called only by the one worker that owns `q`.
    virtual uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept = 0;
    // The worker is done with these packets of queue `q`: a file or mirror source frees
    // them; an inline source transmits them on the other port (docs/live.md). Same lcore as
    // rx_burst(); must not block.
    virtual void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
        (void)q;
        rte_pktmbuf_free_bulk(pkts, n);
    }
    // True once queue `q` will never deliver another packet. Workers ask after rx_burst()
    // returned nothing; a source must make everything it delivered visible before this.
    virtual bool drained(unsigned q) const noexcept = 0;
    // Non-zero: every frame of the last rx_burst(q) was received at this time (ns) and
    // its mbufs carry no timestamp of their own; zero: read each mbuf's timestamp field.
    // Asked at most once per burst, and only for a burst with RoCE in it: a source may
    // read its clock then rather than at every poll.
    virtual uint64_t burst_time_ns(unsigned) noexcept { return 0; }
    // Non-zero for a live source: the time now on the clock its frames are stamped with,
    // asked by a worker whose queue has been empty for a while, so that a quiet link's
    // housekeeping (idle eviction, periodic reports) runs on time rather than at the next
    // frame. Zero (files, memory): time moves with the frames only, and results depend on
    // capture time alone.
    virtual uint64_t quiet_time_ns(unsigned) noexcept { return 0; }

    // The producer side, on the calling (main) lcore, until the input ends or stop().
    // A source whose queues are filled by hardware returns at once. False and `error` on
    // a failure that ended the input early (the packets before it were delivered).
    virtual bool run(std::string& error) = 0;
    // Asks run() to end early (SIGINT); safe from any thread or a signal handler.
    virtual void stop() noexcept = 0;

    // Time of the end of the input (for Engine::finish), valid once every queue drained:
    // the newest capture timestamp for a file, the clock at stop for a live port.
    virtual uint64_t end_ns() const noexcept = 0;
    virtual SourceProgress progress() const noexcept = 0;
};

}  // namespace insert::pipeline
