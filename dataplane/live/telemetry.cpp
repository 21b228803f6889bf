#include "dataplane/live/telemetry.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

namespace insert::live {

namespace {

std::atomic<const LiveStats*> g_stats{nullptr};
std::atomic<unsigned> g_readers{0};
constexpr std::size_t kTopQps = 10;

// Holds the published stats for one command; publish(nullptr) waits for it to end.
class Reader {
  public:
    Reader() {
        g_readers.fetch_add(1);
        stats_ = g_stats.load();
    }
    ~Reader() { g_readers.fetch_sub(1); }
    const LiveStats* get() const { return stats_; }

  private:
    const LiveStats* stats_;
};

void add_u64(rte_tel_data* d, const char* name, uint64_t v) {
    rte_tel_data_add_dict_u64(d, name, v);
}

void add_str(rte_tel_data* d, const char* name, const std::string& v) {
    rte_tel_data_add_dict_string(d, name, v.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
}

int not_running(rte_tel_data* d) {
    rte_tel_data_start_dict(d);
    add_str(d, "status", "no pipeline running");
    return 0;
}

int cmd_stats(const char*, const char*, rte_tel_data* d) {
    Reader r;
    if (!r.get()) return not_running(d);
    const LiveTotals t = r.get()->totals();
    rte_tel_data_start_dict(d);
    add_str(d, "mode", r.get()->mode());
    add_u64(d, "uptime_ms", static_cast<uint64_t>(t.uptime_s * 1000));
    add_u64(d, "frames", t.frames);
    add_u64(d, "pkts", t.pkts);
    add_u64(d, "roce_pkts", t.roce);
    add_u64(d, "non_roce_pkts", t.non_roce);
    add_u64(d, "malformed_pkts", t.malformed);
    add_u64(d, "passthrough", t.passthrough);
    add_u64(d, "msgs", t.msgs);
    add_u64(d, "endpoints", t.endpoints);
    add_u64(d, "endpoints_live", t.endpoints_live);
    add_u64(d, "connections", t.connections);
    add_u64(d, "records_dropped", t.records_dropped);
    add_u64(d, "table_full", t.table_full);
    add_u64(d, "table_full_endpoints", t.table_full_endpoints);
    add_u64(d, "evicted", t.evicted);
    add_u64(d, "msgs_overflow", t.msgs_overflow);
    add_u64(d, "orphans_dropped", t.orphans_dropped);
    add_u64(d, "tx", t.tx);
    add_u64(d, "tx_dropped", t.tx_dropped);
    add_u64(d, "tx_retries", t.tx_retries);
    add_u64(d, "ring_waits", t.ring_waits);
    add_u64(d, "rx_missed", t.rx_missed);
    add_u64(d, "rx_bytes", t.rx_bytes);
    return 0;
}

int cmd_ports(const char*, const char*, rte_tel_data* d) {
    Reader r;
    if (!r.get()) return not_running(d);
    rte_tel_data_start_dict(d);
    for (const PortStats& p : r.get()->port_stats()) {
        rte_tel_data* c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        add_u64(c, "port_id", p.id);
        add_str(c, "driver", p.driver);
        add_u64(c, "queues", p.queues);
        add_str(c, "peer", p.peer == UINT16_MAX ? std::string("none") : std::to_string(p.peer));
        add_u64(c, "hw_timestamp", p.hw_timestamp);
        add_u64(c, "ipackets", p.ipackets);
        add_u64(c, "opackets", p.opackets);
        add_u64(c, "ibytes", p.ibytes);
        add_u64(c, "obytes", p.obytes);
        add_u64(c, "imissed", p.imissed);
        add_u64(c, "ierrors", p.ierrors);
        add_u64(c, "oerrors", p.oerrors);
        add_u64(c, "rx_nombuf", p.rx_nombuf);
        rte_tel_data_add_dict_container(d, p.name.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str(), c,
                                        0);
    }
    return 0;
}

int cmd_workers(const char*, const char*, rte_tel_data* d) {
    Reader r;
    if (!r.get()) return not_running(d);
    rte_tel_data_start_dict(d);
    const std::vector<WorkerStats> workers = r.get()->worker_stats();
    for (std::size_t w = 0; w < workers.size(); ++w) {
        const WorkerStats& ws = workers[w];
        rte_tel_data* c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        add_u64(c, "frames", ws.frames);
        add_u64(c, "roce_pkts", ws.roce);
        add_u64(c, "non_roce_pkts", ws.non_roce);
        add_u64(c, "malformed_pkts", ws.malformed);
        add_u64(c, "bursts", ws.bursts);
        add_u64(c, "busy_us", static_cast<uint64_t>(ws.busy_s * 1e6));
        add_u64(c, "endpoints_live", ws.endpoints_live);
        if (r.get()->endpoint_capacity())
            add_u64(c, "endpoints_capacity", r.get()->endpoint_capacity());
        add_u64(c, "table_full", ws.table_full);
        add_u64(c, "table_full_endpoints", ws.table_full_endpoints);
        add_u64(c, "evicted", ws.evicted);
        add_u64(c, "msgs_overflow", ws.msgs_overflow);
        add_u64(c, "orphans_dropped", ws.orphans_dropped);
        add_u64(c, "msgs", ws.msgs);
        add_u64(c, "records_dropped", ws.records_dropped);
        if (ws.has_lane) {
            add_u64(c, "tx", ws.tx);
            add_u64(c, "tx_dropped", ws.tx_dropped);
            add_u64(c, "tx_retries", ws.tx_retries);
        }
        rte_tel_data_add_dict_container(d, ("worker" + std::to_string(w)).c_str(), c, 0);
    }
    return 0;
}

int cmd_top_qps(const char*, const char*, rte_tel_data* d) {
    Reader r;
    if (!r.get()) return not_running(d);
    // Keyed by rank ("qp0" busiest): dictionary keys may not hold '.' or ':' (an IP), and
    // 22.11 nests dictionaries in dictionaries only.
    rte_tel_data_start_dict(d);
    unsigned rank = 0;
    if (r.get()->boards() == nullptr) return 0;
    for (const state::QpRecord& q : r.get()->boards()->top(kTopQps)) {
        rte_tel_data* c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        uint64_t msgs = 0;
        for (uint64_t m : q.msgs) msgs += m;
        add_str(c, "ip", q.ip.to_string());
        add_u64(c, "qpn", q.qpn);
        add_u64(c, "pkts", q.pkts);
        add_u64(c, "bytes", q.bytes);
        add_u64(c, "msgs", msgs);
        add_u64(c, "dup_pkts", q.dup_pkts);
        add_u64(c, "ooo_pkts", q.ooo_pkts);
        add_u64(c, "gaps", q.gaps);
        add_u64(c, "naks", q.naks.seq + q.naks.rnr + q.naks.inv + q.naks.access + q.naks.op);
        add_u64(c, "cnps", q.cnps);
        add_u64(c, "ecn_ce", q.ecn_ce);
        if (q.pair_by != state::PairBy::none) {
            add_str(c, "peer_ip", q.peer_ip.to_string());
            add_u64(c, "peer_qpn", q.peer_qpn);
        }
        rte_tel_data_add_dict_container(d, ("qp" + std::to_string(rank++)).c_str(), c, 0);
    }
    return 0;
}

int cmd_offload(const char*, const char*, rte_tel_data* d) {
    Reader r;
    if (!r.get()) return not_running(d);
    rte_tel_data_start_dict(d);
    for (const OffloadStats& o : r.get()->offload_stats()) {
        rte_tel_data* c = rte_tel_data_alloc();
        if (c == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(c);
        add_str(c, "steering", o.steering);
        add_u64(c, "rules", o.rules);
        add_u64(c, "refused", o.refused);
        add_str(c, "reason", o.reason.empty() ? std::string("-") : o.reason);
        for (std::size_t k = 0; k < o.descriptions.size(); ++k) {
            char name[32];
            std::snprintf(name, sizeof name, "rule%zu_hits", k);
            add_u64(c, name, o.hits[k]);
            std::snprintf(name, sizeof name, "rule%zu", k);
            add_str(c, name, o.descriptions[k]);
        }
        rte_tel_data_add_dict_container(d, o.port.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str(), c,
                                        0);
    }
    return 0;
}

}  // namespace

LiveStats::LiveStats(std::string mode, const Pipeline& pipeline, const PortSource* source,
                     const QpBoards* boards)
    : mode_(std::move(mode)),
      pipeline_(pipeline),
      source_(source),
      boards_(boards),
      start_tsc_(rte_rdtsc()) {}

LiveTotals LiveStats::totals() const {
    LiveTotals t;
    t.uptime_s =
        static_cast<double>(rte_rdtsc() - start_tsc_) / static_cast<double>(rte_get_tsc_hz());
    uint64_t worker_frames = 0;
    for (unsigned w = 0; w < pipeline_.workers(); ++w) {
        const WorkerCounters& c = pipeline_.worker(w).counters;
        worker_frames += c.frames.load(std::memory_order_relaxed);
        t.roce += c.roce.load(std::memory_order_relaxed);
        t.non_roce += c.non_roce.load(std::memory_order_relaxed);
        for (std::size_t m = 0; m < proto::kMalformedReasons; ++m) {
            const uint64_t n = c.malformed[m].load(std::memory_order_relaxed);
            t.malformed += n;
            t.malformed_by_reason[m] += n;
        }
        const state::EngineCounters& e = pipeline_.engine(w).counters();
        t.msgs += e.msgs.load(std::memory_order_relaxed);
        t.endpoints += e.endpoints.load(std::memory_order_relaxed);
        t.endpoints_live += e.endpoints_live.load(std::memory_order_relaxed);
        t.connections += e.connections.load(std::memory_order_relaxed);
        t.records_dropped += e.records_dropped.load(std::memory_order_relaxed);
        t.table_full += e.table_full.load(std::memory_order_relaxed);
        t.table_full_endpoints +=
            state::refused_endpoints(e.table_full_bits.load(std::memory_order_relaxed));
        t.evicted += e.evicted.load(std::memory_order_relaxed);
        t.msgs_overflow += e.msgs_overflow.load(std::memory_order_relaxed);
        t.orphans_dropped += e.orphans_dropped.load(std::memory_order_relaxed);
    }
    t.frames = worker_frames;
    if (source_) {
        t.frames = source_->received();
        t.passthrough = source_->passthrough();
        for (unsigned l = 0; l < source_->lanes(); ++l) {
            const LaneCounters& c = source_->lane(l);
            t.tx += c.tx.load(std::memory_order_relaxed);
            t.tx_dropped += c.tx_dropped.load(std::memory_order_relaxed);
            t.tx_retries += c.tx_retries.load(std::memory_order_relaxed);
            t.ring_waits += c.ring_waits.load(std::memory_order_relaxed);
        }
        for (const PortInfo& p : source_->ports()) {
            rte_eth_stats s{};
            if (rte_eth_stats_get(p.id, &s) == 0) {
                t.rx_missed += s.imissed + s.rx_nombuf;
                t.rx_bytes += s.ibytes;
            }
        }
    }
    t.non_roce += t.passthrough;
    t.pkts = worker_frames + t.passthrough;
    return t;
}

std::vector<PortStats> LiveStats::port_stats() const {
    std::vector<PortStats> out;
    if (source_ == nullptr) return out;
    for (const PortInfo& p : source_->ports()) {
        PortStats ps;
        ps.id = p.id;
        ps.name = p.name;
        ps.driver = p.driver;
        ps.queues = p.queues;
        ps.peer = p.peer;
        ps.hw_timestamp = p.hw_timestamp;
        rte_eth_stats s{};
        if (rte_eth_stats_get(p.id, &s) == 0) {
            ps.ipackets = s.ipackets;
            ps.opackets = s.opackets;
            ps.ibytes = s.ibytes;
            ps.obytes = s.obytes;
            ps.imissed = s.imissed;
            ps.ierrors = s.ierrors;
            ps.oerrors = s.oerrors;
            ps.rx_nombuf = s.rx_nombuf;
        }
        out.push_back(std::move(ps));
    }
    return out;
}

std::vector<WorkerStats> LiveStats::worker_stats() const {
    const double hz = static_cast<double>(rte_get_tsc_hz());
    std::vector<WorkerStats> out(pipeline_.workers());
    for (unsigned w = 0; w < pipeline_.workers(); ++w) {
        WorkerStats& ws = out[w];
        const WorkerCounters& wc = pipeline_.worker(w).counters;
        const state::EngineCounters& ec = pipeline_.engine(w).counters();
        ws.frames = wc.frames.load(std::memory_order_relaxed);
        ws.roce = wc.roce.load(std::memory_order_relaxed);
        ws.non_roce = wc.non_roce.load(std::memory_order_relaxed);
        for (std::size_t m = 0; m < proto::kMalformedReasons; ++m) {
            ws.malformed_by_reason[m] = wc.malformed[m].load(std::memory_order_relaxed);
            ws.malformed += ws.malformed_by_reason[m];
        }
        ws.bursts = wc.bursts.load(std::memory_order_relaxed);
        ws.busy_s = static_cast<double>(wc.busy_cycles.load(std::memory_order_relaxed)) / hz;
        ws.endpoints_live = ec.endpoints_live.load(std::memory_order_relaxed);
        ws.table_full = ec.table_full.load(std::memory_order_relaxed);
        ws.table_full_endpoints =
            state::refused_endpoints(ec.table_full_bits.load(std::memory_order_relaxed));
        ws.evicted = ec.evicted.load(std::memory_order_relaxed);
        ws.msgs_overflow = ec.msgs_overflow.load(std::memory_order_relaxed);
        ws.orphans_dropped = ec.orphans_dropped.load(std::memory_order_relaxed);
        ws.msgs = ec.msgs.load(std::memory_order_relaxed);
        ws.records_dropped = ec.records_dropped.load(std::memory_order_relaxed);
        if (source_ && w < source_->lanes()) {
            const LaneCounters& l = source_->lane(w);
            ws.has_lane = true;
            ws.tx = l.tx.load(std::memory_order_relaxed);
            ws.tx_dropped = l.tx_dropped.load(std::memory_order_relaxed);
            ws.tx_retries = l.tx_retries.load(std::memory_order_relaxed);
        }
    }
    return out;
}

std::vector<OffloadStats> LiveStats::offload_stats() const {
    std::vector<OffloadStats> out;
    if (source_ == nullptr) return out;
    for (unsigned i = 0; i < source_->ports().size(); ++i) {
        const offload::OffloadState& o = source_->offload(i);
        OffloadStats os;
        os.port = source_->ports()[i].name;
        os.steering = source_->steer() == SteerMode::hardware ? "hardware"
                      : o.emulated                            ? "emulated"
                                                              : "software-rss";
        os.rules = o.rules;
        os.refused = o.refused;
        os.reason = o.reason;
        os.descriptions = o.descriptions;
        for (std::size_t k = 0; k < o.descriptions.size(); ++k)
            os.hits.push_back(k < o.hits.size() ? o.hits[k].load(std::memory_order_relaxed) : 0);
        out.push_back(std::move(os));
    }
    return out;
}

exporter::SummaryCounts LiveStats::summary(double wall_s) const {
    exporter::SummaryCounts s = pipeline_.totals(wall_s);
    const uint64_t pass = source_ ? source_->passthrough() : 0;
    s.pkts += pass;
    s.non_roce_pkts += pass;
    s.mpps = wall_s > 0 ? static_cast<double>(s.pkts) / wall_s / 1e6 : 0.0;
    return s;
}

void register_telemetry() {
    static std::once_flag once;
    std::call_once(once, [] {
        rte_telemetry_register_cmd(
            "/insert/stats", cmd_stats,
            "INSERT totals: frames, RoCE, msgs, endpoints, drops. No parameters");
        rte_telemetry_register_cmd("/insert/ports", cmd_ports,
                                   "INSERT ports: ethdev counters per port. No parameters");
        rte_telemetry_register_cmd(
            "/insert/workers", cmd_workers,
            "INSERT workers: packets, busy time, table occupancy, drops. No parameters");
        rte_telemetry_register_cmd("/insert/top_qps", cmd_top_qps,
                                   "INSERT busiest endpoints (ip/qpn) by bytes. No parameters");
        rte_telemetry_register_cmd(
            "/insert/offload", cmd_offload,
            "INSERT rte_flow plan per port: hardware or emulated, refusals, hits. No parameters");
    });
}

void read_published(const std::function<void(const LiveStats*)>& read) {
    Reader r;
    read(r.get());
}

void publish(const LiveStats* stats) {
    g_stats.store(stats);
    if (stats == nullptr)
        while (g_readers.load() != 0) std::this_thread::yield();
}

}  // namespace insert::live
