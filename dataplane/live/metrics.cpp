#include "dataplane/live/metrics.hpp"

#include <string>
#include <vector>

#include "dataplane/common/prometheus_text.hpp"

namespace insert::live {

namespace {

using prometheus::Label;
using prometheus::MetricType;
using prometheus::TextWriter;

constexpr MetricType kCounter = MetricType::counter;
constexpr MetricType kGauge = MetricType::gauge;

// The totals over every port and worker, as /insert/stats reports them.
void totals(TextWriter& w, const LiveTotals& t, uint64_t capacity, unsigned workers) {
    w.family("insert_dp_uptime_seconds", kGauge, "Seconds since the pipeline started.")
        .sample({}, t.uptime_s);
    w.family("insert_dp_frames_total", kCounter,
             "Frames taken from the ports (every frame, RoCE or not). Non-zero: traffic "
             "reaches the appliance; flat while the link carries traffic: nothing is received.")
        .sample({}, t.frames);
    w.family("insert_dp_roce_frames_total", kCounter,
             "Well-formed RoCEv2 frames observed by the workers. Non-zero: RDMA traffic is "
             "being turned into records.")
        .sample({}, t.roce);
    w.family("insert_dp_non_roce_frames_total", kCounter,
             "Frames that are not RoCEv2 (forwarded unobserved), passthrough included. "
             "Non-zero is normal on a shared link.")
        .sample({}, t.non_roce);
    w.family("insert_dp_passthrough_frames_total", kCounter,
             "Frames the rte_flow plan (hardware or emulated) forwarded without a worker. "
             "Non-zero is normal: non-RoCE traffic bypassing the workers.")
        .sample({}, t.passthrough);
    w.family("insert_dp_malformed_frames_total", kCounter,
             "RoCEv2 frames the parser refused, by reason (length_mismatch: IP/UDP lengths "
             "disagree with the frame; truncated: too short for its headers; reserved_opcode: "
             "a BTH opcode RoCEv2 does not define). Non-zero: a broken sender, a bad capture "
             "or an attack; such frames are counted, not tracked.");
    for (std::size_t m = 1; m < proto::kMalformedReasons; ++m)
        w.sample({{"reason", proto::malformed_name(static_cast<proto::Malformed>(m))}},
                 t.malformed_by_reason[m]);
    w.family("insert_dp_messages_total", kCounter,
             "RDMA messages (msg records) completed by the state engines. Non-zero: operations "
             "are being reported.")
        .sample({}, t.msgs);
    w.family("insert_dp_endpoints_total", kCounter,
             "Endpoint lifetimes the engines created (an endpoint evicted and seen again "
             "counts twice). Non-zero: QPs were seen.")
        .sample({}, t.endpoints);
    w.family("insert_dp_connections_total", kCounter,
             "Connections (CM exchanges) the engines saw. Non-zero: QPs were set up while "
             "observed.")
        .sample({}, t.connections);
    w.family("insert_dp_endpoints", kGauge,
             "Endpoints held now in the workers' tables (occupancy). Near "
             "insert_dp_endpoints_capacity: new endpoints are about to be refused.")
        .sample({}, t.endpoints_live);
    w.family("insert_dp_endpoints_capacity", kGauge,
             "Endpoints the workers' tables can hold, all workers together (--max-endpoints "
             "per worker).")
        .sample({}, capacity * workers);
    w.family("insert_dp_evicted_endpoints_total", kCounter,
             "Endpoints evicted after --idle-timeout without traffic (their final qp record "
             "written). Non-zero is normal on a long run.")
        .sample({}, t.evicted);
    w.family("insert_dp_table_full_frames_total", kCounter,
             "RoCE frames not tracked because the endpoint table was full. Non-zero: raise "
             "--max-endpoints or add workers; those endpoints have no records.")
        .sample({}, t.table_full);
    w.family("insert_dp_table_full_endpoints_total", kCounter,
             "Distinct endpoints refused because the table was full (estimated, within 1%). "
             "Non-zero: see insert_dp_table_full_frames_total.")
        .sample({}, t.table_full_endpoints);
    w.family("insert_dp_messages_overflow_total", kCounter,
             "Messages not tracked because an endpoint had too many open at once. Non-zero: "
             "deep pipelining or lost acknowledgements; those messages have no msg record.")
        .sample({}, t.msgs_overflow);
    w.family("insert_dp_orphans_dropped_total", kCounter,
             "Responses whose request was never seen, dropped. Non-zero: the capture started "
             "mid-transfer or the request path is not observed.")
        .sample({}, t.orphans_dropped);
    w.family("insert_dp_records_dropped_total", kCounter,
             "Records refused because a record ring was full (--record-full drop). Non-zero: "
             "the records output cannot keep up; records were lost.")
        .sample({}, t.records_dropped);
    w.family("insert_dp_ring_waits_total", kCounter,
             "Times the dispatching lcore waited because a worker's ring was full. Non-zero: "
             "a worker is saturated; the port then drops at its own Rx ring.")
        .sample({}, t.ring_waits);
    w.family("insert_dp_tx_frames_total", kCounter,
             "Frames transmitted on the other port (inline). Non-zero: traffic is forwarded.")
        .sample({}, t.tx);
    w.family("insert_dp_tx_dropped_total", kCounter,
             "Frames dropped because the Tx queue stayed full after 64 retries. Non-zero: "
             "inline forwarding lost frames.")
        .sample({}, t.tx_dropped);
    w.family("insert_dp_tx_retries_total", kCounter,
             "Tx retries on a full queue (back-pressure). Non-zero: the outgoing port is "
             "congested; frames are delayed, not lost.")
        .sample({}, t.tx_retries);
    w.family("insert_dp_rx_missed_total", kCounter,
             "Frames the ports missed (ethdev imissed + rx_nombuf over the ports). Non-zero: "
             "the appliance did not keep up and frames were neither observed nor forwarded.")
        .sample({}, t.rx_missed);
}

void ports(TextWriter& w, const std::vector<PortStats>& ports) {
    w.family("insert_dp_port_info", kGauge, "1 per port: its device name and driver.");
    for (const PortStats& p : ports) w.sample({{"port", p.name}, {"driver", p.driver}}, 1.0);
    w.family("insert_dp_port_frames_total", kCounter,
             "Frames per port and direction (ethdev ipackets, opackets). Non-zero rx: the port "
             "receives.");
    for (const PortStats& p : ports) {
        w.sample({{"port", p.name}, {"direction", "rx"}}, p.ipackets);
        w.sample({{"port", p.name}, {"direction", "tx"}}, p.opackets);
    }
    w.family("insert_dp_port_bytes_total", kCounter,
             "Bytes per port and direction (ethdev ibytes, obytes).");
    for (const PortStats& p : ports) {
        w.sample({{"port", p.name}, {"direction", "rx"}}, p.ibytes);
        w.sample({{"port", p.name}, {"direction", "tx"}}, p.obytes);
    }
    w.family("insert_dp_port_errors_total", kCounter,
             "Erroneous frames per port and direction (ethdev ierrors, oerrors). Non-zero: bad "
             "frames on the wire, or frames too big for the other port.");
    for (const PortStats& p : ports) {
        w.sample({{"port", p.name}, {"direction", "rx"}}, p.ierrors);
        w.sample({{"port", p.name}, {"direction", "tx"}}, p.oerrors);
    }
    w.family("insert_dp_port_rx_missed_total", kCounter,
             "Frames a port missed (ethdev imissed + rx_nombuf). Non-zero: its Rx ring "
             "overflowed or mbufs ran out.");
    for (const PortStats& p : ports) w.sample({{"port", p.name}}, p.imissed + p.rx_nombuf);
}

void workers(TextWriter& w, const std::vector<WorkerStats>& workers, uint64_t capacity) {
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < workers.size(); ++i) ids.push_back(std::to_string(i));
    w.family("insert_dp_worker_frames_total", kCounter,
             "Frames each worker processed; rate() gives its packet rate. Zero on one worker "
             "while others count: steering sends it nothing.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].frames);
    w.family("insert_dp_worker_roce_frames_total", kCounter, "RoCEv2 frames each worker observed.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].roce);
    w.family("insert_dp_worker_messages_total", kCounter,
             "Messages each worker's engine completed.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].msgs);
    w.family("insert_dp_worker_busy_seconds_total", kCounter,
             "Seconds each worker spent on bursts that held frames; rate() near 1: the worker "
             "is saturated.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].busy_s);
    w.family("insert_dp_worker_endpoints", kGauge,
             "Endpoints held in each worker's table. Near insert_dp_worker_endpoints_capacity: "
             "that worker will refuse new endpoints.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].endpoints_live);
    w.family("insert_dp_worker_endpoints_capacity", kGauge,
             "Endpoints each worker's table can hold (--max-endpoints).");
    for (std::size_t i = 0; i < workers.size(); ++i) w.sample({{"worker", ids[i]}}, capacity);
    w.family("insert_dp_worker_table_full_frames_total", kCounter,
             "RoCE frames each worker could not track (table full). Non-zero: that worker's "
             "table is too small.");
    for (std::size_t i = 0; i < workers.size(); ++i)
        w.sample({{"worker", ids[i]}}, workers[i].table_full);
}

void offload(TextWriter& w, const std::vector<OffloadStats>& plans) {
    w.family("insert_dp_offload_steering", kGauge,
             "1 per port with how its frames are steered: hardware (the NIC took the rte_flow "
             "plan), emulated (refused: the same rules in software), software-rss (--offload "
             "off).");
    for (const OffloadStats& o : plans) w.sample({{"port", o.port}, {"steering", o.steering}}, 1.0);
    w.family("insert_dp_offload_rules", kGauge, "rte_flow rules in each port's plan.");
    for (const OffloadStats& o : plans) w.sample({{"port", o.port}}, o.rules);
    w.family("insert_dp_offload_rules_refused", kGauge,
             "Rules of the plan the port refused. Non-zero: the plan runs emulated in software "
             "(costs CPU per frame; /insert/offload says why).");
    for (const OffloadStats& o : plans) w.sample({{"port", o.port}}, o.refused);
    w.family("insert_dp_offload_rule_hits_total", kCounter,
             "Frames each emulated rule decided (rule: its index in the plan, /insert/offload "
             "names it). Zero in hardware steering.");
    for (const OffloadStats& o : plans)
        for (std::size_t k = 0; k < o.hits.size(); ++k)
            w.sample({{"port", o.port}, {"rule", std::to_string(k)}}, o.hits[k]);
}

}  // namespace

std::string prometheus_metrics(const LiveStats* stats, std::string_view mode,
                               std::string_view version) {
    std::string out;
    TextWriter w(out);
    w.family("insert_dp_info", kGauge, "1: the program's version and mode (inline, monitor).")
        .sample({{"version", version}, {"mode", mode}}, 1.0);
    w.family("insert_dp_running", kGauge,
             "1 while the pipeline runs; 0 before it started and once it stopped (its counters "
             "are then not shown).")
        .sample({}, stats ? 1.0 : 0.0);
    if (stats == nullptr) return out;
    const std::vector<WorkerStats> per_worker = stats->worker_stats();
    totals(w, stats->totals(), stats->endpoint_capacity(),
           static_cast<unsigned>(per_worker.size()));
    ports(w, stats->port_stats());
    workers(w, per_worker, stats->endpoint_capacity());
    offload(w, stats->offload_stats());
    return out;
}

std::string published_metrics(std::string_view mode, std::string_view version) {
    std::string out;
    read_published([&](const LiveStats* stats) { out = prometheus_metrics(stats, mode, version); });
    return out;
}

}  // namespace insert::live
