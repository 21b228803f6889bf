// Live statistics of a running pipeline: one snapshot reader over the lock-free counters
// (worker and engine atomics, the source's lane counters, ethdev stats, the QP boards),
// served four ways: DPDK telemetry commands (/insert/stats, /insert/ports, /insert/workers,
// /insert/top_qps, /insert/offload - read with dpdk-telemetry.py or any collector of DPDK
// telemetry), Prometheus /metrics (--http, live/metrics.hpp), the live terminal view, and
// the final summary counts.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataplane/export/record_writer.hpp"
#include "dataplane/live/qp_board.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/ports/port_source.hpp"
#include "dataplane/proto/parser.hpp"

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
    std::array<uint64_t, proto::kMalformedReasons> malformed_by_reason{};  // [none] stays 0
};

// One port: what it is and its ethdev counters.
struct PortStats {
    uint16_t id = 0;
    std::string name;
    std::string driver;
    uint16_t queues = 1;
    uint16_t peer = UINT16_MAX;
    bool hw_timestamp = false;
    uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0;
    uint64_t imissed = 0, ierrors = 0, oerrors = 0, rx_nombuf = 0;
};

// One worker: its frames and its engine's counters (and its Tx lane's, when it has one).
struct WorkerStats {
    uint64_t frames = 0, roce = 0, non_roce = 0, malformed = 0, bursts = 0;
    std::array<uint64_t, proto::kMalformedReasons> malformed_by_reason{};
    double busy_s = 0;
    uint64_t endpoints_live = 0, table_full = 0, table_full_endpoints = 0, evicted = 0;
    uint64_t msgs_overflow = 0, orphans_dropped = 0, msgs = 0, records_dropped = 0;
    bool has_lane = false;
    uint64_t tx = 0, tx_dropped = 0, tx_retries = 0;
};

// One port's rte_flow plan: how frames are steered, its rules and their emulated hits.
struct OffloadStats {
    std::string port;
    std::string steering;  // hardware, emulated, software-rss
    uint64_t rules = 0;
    uint64_t refused = 0;
    std::string reason;  // the first refusal, or empty
    std::vector<std::string> descriptions;
    std::vector<uint64_t> hits;  // per rule
};

class LiveStats {
  public:
    // `source` may be null (bench: no ports). Everything referenced must outlive the
    // LiveStats, and it must be unpublished (publish(nullptr)) before they go.
    LiveStats(std::string mode, const Pipeline& pipeline, const PortSource* source,
              const QpBoards* boards);

    LiveTotals totals() const;
    std::vector<PortStats> port_stats() const;
    std::vector<WorkerStats> worker_stats() const;
    std::vector<OffloadStats> offload_stats() const;
    // The endpoint table's capacity per worker (--max-endpoints; 0: not said).
    void set_endpoint_capacity(uint64_t per_worker) { endpoint_capacity_ = per_worker; }
    uint64_t endpoint_capacity() const { return endpoint_capacity_; }
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
    uint64_t endpoint_capacity_ = 0;
};

// Registers the /insert/* commands with rte_telemetry (once per process; after EAL init).
void register_telemetry();
// Makes `stats` what the commands report (nullptr: nothing). Unpublishing waits for any
// command in progress, so the caller may then destroy what `stats` refers to.
void publish(const LiveStats* stats);
// Calls `read` with the stats published now (nullptr: none), held for the call: a publish()
// that unpublishes them waits for it. From any thread (the telemetry commands, /metrics).
void read_published(const std::function<void(const LiveStats*)>& read);

}  // namespace insert::live
