// Live statistics of a running pipeline: one snapshot reader over the lock-free counters
// (worker and engine atomics, the source's lane counters, ethdev stats, the QP boards),
// served three ways: DPDK telemetry commands (/insert/stats, /insert/ports, /insert/workers,
// /insert/top_qps, /insert/offload - read with dpdk-telemetry.py or any collector of DPDK
// telemetry), the live terminal view, and the final summary counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/export/record_writer.hpp"
#include "dataplane/live/qp_board.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/ports/port_source.hpp"

namespace insert::live {

using pipeline::Pipeline;
using pipeline::WorkerCounters;
using ports::LaneCounters;
using ports::PortInfo;
using ports::PortSource;
using ports::SteerMode;

struct LiveTotals {
    double uptime_s = 0;
    uint64_t frames = 0;  // every frame taken from the ports (or the memory source)
    uint64_t pkts = 0;    // summary pkts: worker frames + passthrough
    uint64_t roce = 0;
    uint64_t non_roce = 0;  // including passthrough
    uint64_t malformed = 0;
    uint64_t passthrough = 0;  // forwarded without a worker (emulated/hardware plan)
    uint64_t msgs = 0;
    uint64_t endpoints = 0;
    uint64_t endpoints_live = 0;
    uint64_t connections = 0;
    uint64_t records_dropped = 0;
    uint64_t table_full = 0;
    uint64_t table_full_endpoints = 0;
    uint64_t evicted = 0;
    uint64_t msgs_overflow = 0;
    uint64_t orphans_dropped = 0;
    uint64_t tx = 0;
    uint64_t tx_dropped = 0;
    uint64_t tx_retries = 0;
    uint64_t ring_waits = 0;
    uint64_t rx_missed = 0;  // ethdev imissed + rx_nombuf over the ports
    uint64_t rx_bytes = 0;   // ethdev ibytes over the ports
};

class LiveStats {
  public:
    // `source` may be null (bench: no ports). Everything referenced must outlive the
    // LiveStats, and it must be unpublished (publish(nullptr)) before they go.
    LiveStats(std::string mode, const Pipeline& pipeline, const PortSource* source,
              const QpBoards* boards);

    LiveTotals totals() const;
    // The summary record of the run (SPEC 7), passthrough frames counted as non-RoCE.
    exporter::SummaryCounts summary(double wall_s) const;

    const std::string& mode() const { return mode_; }
    const Pipeline& pipeline() const { return pipeline_; }
    const PortSource* source() const { return source_; }
    const QpBoards* boards() const { return boards_; }

  private:
    std::string mode_;
    const Pipeline& pipeline_;
    const PortSource* source_;
    const QpBoards* boards_;
    uint64_t start_tsc_;
};

// Registers the /insert/* commands with rte_telemetry (once per process; after EAL init).
void register_telemetry();
// Makes `stats` what the commands report (nullptr: nothing). Unpublishing waits for any
// command in progress, so the caller may then destroy what `stats` refers to.
void publish(const LiveStats* stats);

}  // namespace insert::live
