#include "dataplane/pipeline/port_source.hpp"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_prefetch.h>
#include <time.h>

#include <chrono>
#include <thread>

#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/pipeline/hairpin.hpp"

namespace insert::pipeline {

namespace {

constexpr uint16_t kBurst = 32;
constexpr const char* kHairpinHint =
    " (run with --no-hairpin to forward non-RoCE frames in software)";
constexpr unsigned kTxDrainUs = 100;  // l2fwd's drain period: bounds the added latency
constexpr unsigned kTxRetries = 64;   // tries on a full Tx queue before dropping
constexpr unsigned kPoolCache = 256;
// Direct mode: the main lcore only waits for the stop; 10 ms bounds the reaction to it
// (SIGINT, --duration) with 100 wake-ups a second on the core it shares.
constexpr auto kIdleMainSleep = std::chrono::milliseconds(10);
constexpr auto kClockCalibration = std::chrono::milliseconds(20);
std::atomic<unsigned> g_sequence{0};

inline void bump(std::atomic<uint64_t>& c, uint64_t by) noexcept {
    c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

struct PortSource::Lane {
    unsigned index = 0;
    uint16_t tx_queue = 0;  // the Tx queue it owns on every port (= index unless single_tx_)
    LaneCounters counters;
    std::vector<rte_eth_dev_tx_buffer*> tx;  // by port index: frames bound for that port
    struct ErrorContext {
        Lane* lane;
        uint16_t port;
    };
    std::vector<ErrorContext> error_context;
    std::vector<RxQueue> rx;  // direct/hardware: what this lane polls
    unsigned next_rx = 0;     // round-robin start
    uint64_t last_flush = 0;
    uint64_t burst_ns = 0;  // time of the last poll, once asked for (burst_time_ns); 0: not yet
    unsigned unflushed = 0;
    std::atomic<bool> finished{false};
    // dispatch mode (main lane): per-worker staging
    std::vector<std::vector<rte_mbuf*>> staging;
};

namespace {

// A full Tx queue: retry (back-pressure), then count and free what still does not fit.
void on_tx_full(rte_mbuf** unsent, uint16_t count, void* userdata) {
    auto* ctx = static_cast<PortSource::Lane::ErrorContext*>(userdata);
    uint16_t sent = 0;
    for (unsigned r = 0; r < kTxRetries && sent < count; ++r) {
        bump(ctx->lane->counters.tx_retries, 1);
        rte_pause();
        sent += rte_eth_tx_burst(ctx->port, ctx->lane->tx_queue, unsent + sent, count - sent);
    }
    if (sent < count) {
        bump(ctx->lane->counters.tx_dropped, count - sent);
        rte_pktmbuf_free_bulk(unsent + sent, count - sent);
    }
}

// Applies each frame's port plan over one burst. A burst comes from one or two ports: the
// plan is looked up when the port changes, and rule hits are counted per run of equal
// decisions, not per frame (both were dependent loads or a counter write per frame).
class BurstClassifier {
  public:
    BurstClassifier(const std::vector<std::unique_ptr<offload::OffloadState>>& plans,
                    const std::vector<int>& port_index)
        : plans_(plans), port_index_(port_index) {}
    ~BurstClassifier() { count_run(); }
    BurstClassifier(const BurstClassifier&) = delete;
    BurstClassifier& operator=(const BurstClassifier&) = delete;

    // False: the frame's port has no emulated plan (hardware or software steering).
    bool classify(const rte_mbuf* m, offload::Decision& d) noexcept {
        if (m->port != port_) {
            count_run();
            port_ = m->port;
            plan_ = plans_[port_index_[port_]].get();
            run_rule_ = -1;
        }
        if (!plan_->emulated) return false;
        d = plan_->classifier.classify({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len});
        if (d.rule != run_rule_) {
            count_run();
            run_rule_ = d.rule;
        }
        ++run_;
        return true;
    }

  private:
    void count_run() noexcept {
        if (run_rule_ >= 0) bump(plan_->hits[run_rule_], run_);
        run_ = 0;
    }
    const std::vector<std::unique_ptr<offload::OffloadState>>& plans_;
    const std::vector<int>& port_index_;
    uint16_t port_ = UINT16_MAX;
    offload::OffloadState* plan_ = nullptr;
    int32_t run_rule_ = -1;
    uint64_t run_ = 0;
};

}  // namespace

std::unique_ptr<PortSource> PortSource::create(const PortSourceConfig& config,
                                               const MbufTimestamp& timestamp, std::string& error) {
    if (config.workers == 0) {
        error = "need at least one worker";
        return nullptr;
    }
    if (config.mode == PortMode::inline_pair && config.devices.size() != 2) {
        error = "inline mode needs exactly two ports (got " +
                std::to_string(config.devices.size()) + ")";
        return nullptr;
    }
    if (config.devices.empty()) {
        error = "no port given";
        return nullptr;
    }
    std::unique_ptr<PortSource> src(new PortSource());
    src->config_ = config;
    src->timestamp_ = timestamp;
    src->workers_ = config.workers;
    src->port_index_.assign(RTE_MAX_ETHPORTS, -1);

    const uint64_t hz = rte_get_tsc_hz();
    src->drain_tsc_ = hz / 1'000'000 * kTxDrainUs;

    const unsigned nports = static_cast<unsigned>(config.devices.size());
    const unsigned queues = config.workers + 1;
    const unsigned lanes = config.workers + 1;
    const unsigned mbufs = nports * queues * (config.rx_desc + config.tx_desc) +
                           config.workers * config.worker_ring + lanes * nports * kBurst +
                           rte_lcore_count() * kPoolCache * 3 / 2 + 4096;
    const std::string pool_name = "insert_port" + std::to_string(g_sequence++);
    src->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), mbufs, kPoolCache, 0,
                                         static_cast<uint16_t>(config.mbuf_data_room),
                                         static_cast<int>(rte_socket_id()));
    if (src->pool_ == nullptr) {
        error = "cannot allocate " + std::to_string(mbufs) + " mbufs of " +
                std::to_string(config.mbuf_data_room) + " B: " + rte_strerror(rte_errno) +
                " (more hugepages, or -m with --no-huge)";
        return nullptr;
    }
    for (unsigned i = 0; i < nports; ++i)
        if (!src->setup_port(i, config.devices[i], error)) return nullptr;
    src->started_ = true;
    if (config.mode == PortMode::inline_pair) {
        src->ports_[0].peer = src->ports_[1].id;
        src->ports_[1].peer = src->ports_[0].id;
        if (src->ports_[0].hairpin && src->ports_[1].hairpin &&
            !bind_hairpin(src->ports_[0].id, src->ports_[1].id, error)) {
            error += kHairpinHint;
            return nullptr;
        }
    }

    // The offload plan, per port.
    bool all_hardware = config.offload != offload::OffloadMode::off;
    for (unsigned i = 0; i < nports; ++i) {
        auto state = std::make_unique<offload::OffloadState>();
        offload::NicCaps caps =
            offload::read_caps(src->ports_[i].id, static_cast<uint16_t>(config.workers));
        // The plan may target the hairpin queue only where one was set up and bound.
        caps.hairpin = caps.hairpin && src->ports_[i].hairpin;
        const offload::RulePlan plan = offload::build_insert_rules(caps);
        if (!offload::install_plan(src->ports_[i].id, plan, config.offload, *state, error))
            return nullptr;
        all_hardware = all_hardware && state->hardware;
        src->offload_.push_back(std::move(state));
    }
    src->steer_ = all_hardware          ? SteerMode::hardware
                  : config.workers == 1 ? SteerMode::direct
                                        : SteerMode::dispatch;
    if (!all_hardware)
        for (auto& o : src->offload_) offload::remove_plan(*o);  // all or nothing, per run
    for (const auto& o : src->offload_) src->any_emulated_ = src->any_emulated_ || o->emulated;
    src->stamp_mbufs_ = src->steer_ == SteerMode::dispatch;
    for (const PortInfo& p : src->ports_) src->stamp_mbufs_ = src->stamp_mbufs_ || p.hw_timestamp;

    for (unsigned i = 0; i < nports; ++i)
        for (uint16_t q = 0; q < src->ports_[i].queues; ++q)
            src->all_rx_.push_back({src->ports_[i].id, q});

    // Lanes and their Tx buffers.
    for (unsigned l = 0; l < lanes; ++l) {
        auto lane = std::make_unique<Lane>();
        lane->index = l;
        lane->tx_queue = static_cast<uint16_t>(src->single_tx_ ? 0 : l);
        lane->error_context.reserve(nports);
        for (unsigned i = 0; i < nports; ++i) {
            auto* buf = static_cast<rte_eth_dev_tx_buffer*>(
                rte_zmalloc_socket("insert_txbuf", RTE_ETH_TX_BUFFER_SIZE(kBurst), 0,
                                   static_cast<int>(rte_socket_id())));
            if (buf == nullptr) {
                error = "cannot allocate Tx buffers";
                return nullptr;
            }
            rte_eth_tx_buffer_init(buf, kBurst);
            lane->error_context.push_back({lane.get(), src->ports_[i].id});
            rte_eth_tx_buffer_set_err_callback(buf, on_tx_full, &lane->error_context.back());
            lane->tx.push_back(buf);
        }
        src->lanes_.push_back(std::move(lane));
    }
    switch (src->steer_) {
        case SteerMode::hardware:
            for (unsigned q = 0; q < config.workers; ++q)
                for (const PortInfo& p : src->ports_)
                    src->lanes_[q]->rx.push_back({p.id, static_cast<uint16_t>(q)});
            for (const PortInfo& p : src->ports_)
                src->pass_rx_.push_back({p.id, static_cast<uint16_t>(config.workers)});
            break;
        case SteerMode::direct:
            src->lanes_[0]->rx = src->all_rx_;
            break;
        case SteerMode::dispatch: {
            const unsigned id = g_sequence++;
            for (unsigned q = 0; q < config.workers; ++q) {
                const std::string name =
                    "insert_live" + std::to_string(id) + "_" + std::to_string(q);
                rte_ring* r = rte_ring_create(name.c_str(), config.worker_ring,
                                              static_cast<int>(rte_socket_id()),
                                              RING_F_SP_ENQ | RING_F_SC_DEQ);
                if (r == nullptr) {
                    error = "cannot allocate worker ring " + name + ": " + rte_strerror(rte_errno);
                    return nullptr;
                }
                src->rings_.push_back(r);
            }
            if (src->single_tx_ && config.mode == PortMode::inline_pair) {
                // Workers hand processed frames back; the main lcore transmits them.
                for (unsigned q = 0; q < config.workers; ++q) {
                    const std::string name =
                        "insert_back" + std::to_string(id) + "_" + std::to_string(q);
                    rte_ring* r = rte_ring_create(name.c_str(), config.worker_ring,
                                                  static_cast<int>(rte_socket_id()),
                                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
                    if (r == nullptr) {
                        error =
                            "cannot allocate return ring " + name + ": " + rte_strerror(rte_errno);
                        return nullptr;
                    }
                    src->back_.push_back(r);
                }
            }
            src->lanes_[config.workers]->staging.resize(config.workers);
            for (auto& s : src->lanes_[config.workers]->staging) s.reserve(kBurst);
            break;
        }
    }
    return src;
}

bool PortSource::setup_port(unsigned index, const std::string& device, std::string& error) {
    uint16_t pid = 0;
    if (rte_eth_dev_get_port_by_name(device.c_str(), &pid) != 0) {
        error =
            "no DPDK port " + device + " (EAL did not create it; check the --vdev/--port options)";
        return false;
    }
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(pid, &info) != 0) {
        error = "port " + device + ": cannot read device info";
        return false;
    }
    PortInfo p;
    p.id = pid;
    p.name = device;
    p.driver = info.driver_name ? info.driver_name : "?";
    // One queue pair per worker plus one for the main lcore where the port has them; a
    // port with a single pair (af_packet is set up so: one socket keeps Rx in wire order)
    // is served by one transmitting lcore (single_tx_).
    unsigned queues = workers_ + 1;
    if (info.max_rx_queues >= 1 && info.max_tx_queues >= 1 &&
        (info.max_rx_queues < queues || info.max_tx_queues < queues) &&
        std::min(info.max_rx_queues, info.max_tx_queues) == 1) {
        queues = 1;
        single_tx_ = true;
    }
    if (info.max_rx_queues < queues || info.max_tx_queues < queues) {
        error = "port " + device + " (" + p.driver + ") has " + std::to_string(info.max_rx_queues) +
                " Rx / " + std::to_string(info.max_tx_queues) + " Tx queues; " +
                std::to_string(workers_) + " workers need " + std::to_string(queues) +
                " (one per worker and one for passthrough)";
        return false;
    }
    p.queues = static_cast<uint16_t>(queues);
    // Hardware hairpin (inline, both ports capable, not a single-queue port): one more
    // queue pair, at index `queues`, that the passthrough rule targets.
    uint16_t peer_pid = UINT16_MAX;
    if (config_.hairpin && config_.mode == PortMode::inline_pair && !single_tx_ &&
        rte_eth_dev_get_port_by_name(config_.devices[1 - index].c_str(), &peer_pid) == 0 &&
        hairpin_capable(pid) && hairpin_capable(peer_pid))
        p.hairpin = true;
    const auto configured = static_cast<uint16_t>(queues + (p.hairpin ? 1 : 0));
    // af_packet reports 1518 whatever its ring slots hold; its limit is the slot size,
    // which check_geometry() verified against the MTU.
    const bool af_packet = p.driver == "net_af_packet";
    if (!af_packet && info.max_rx_pktlen != 0 && info.max_rx_pktlen < config_.max_frame) {
        error = "port " + device + " (" + p.driver + ") receives frames of at most " +
                std::to_string(info.max_rx_pktlen) + " B; the MTU needs " +
                std::to_string(config_.max_frame);
        return false;
    }
    const uint32_t room = config_.mbuf_data_room - RTE_PKTMBUF_HEADROOM;
    if (room < config_.max_frame) {
        error = "mbufs of " + std::to_string(config_.mbuf_data_room) + " B cannot hold a " +
                std::to_string(config_.max_frame) + "-byte frame";
        return false;
    }

    rte_eth_conf conf{};
    const uint64_t rss = info.flow_type_rss_offloads & offload::kIpOnlyRssTypes;
    if (queues > 1 && rss != 0) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss;
    }
    if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP) {
        conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
        p.hw_timestamp = true;
    }
    if (config_.max_frame > RTE_ETHER_MAX_LEN && !af_packet) {
        // af_packet takes the interface's MTU as it is; a NIC needs its MTU raised.
        conf.rxmode.mtu = config_.max_frame - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
    }
    int rc = rte_eth_dev_configure(pid, configured, configured, &conf);
    if (rc != 0) {
        error = "port " + device + " (" + p.driver + "): configure failed: " + rte_strerror(-rc);
        return false;
    }
    uint16_t rxd = config_.rx_desc, txd = config_.tx_desc;
    rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(pid) >= 0 ? rte_eth_dev_socket_id(pid)
                                                       : static_cast<int>(rte_socket_id());
    for (uint16_t q = 0; q < queues; ++q) {
        rte_eth_rxconf rxconf = info.default_rxconf;
        rxconf.offloads = conf.rxmode.offloads;
        if ((rc = rte_eth_rx_queue_setup(pid, q, rxd, static_cast<unsigned>(socket), &rxconf,
                                         pool_)) != 0) {
            error = "port " + device + " (" + p.driver + "): Rx queue " + std::to_string(q) +
                    " set-up failed: " + rte_strerror(-rc) +
                    " (frame/mbuf sizes inconsistent? see the af_packet settings)";
            return false;
        }
        if ((rc = rte_eth_tx_queue_setup(pid, q, txd, static_cast<unsigned>(socket), nullptr)) !=
            0) {
            error = "port " + device + " (" + p.driver + "): Tx queue " + std::to_string(q) +
                    " set-up failed: " + rte_strerror(-rc);
            return false;
        }
    }
    std::string hairpin_error;
    if (p.hairpin &&
        !setup_hairpin_queues(pid, peer_pid, static_cast<uint16_t>(queues), hairpin_error)) {
        error = "port " + device + " (" + p.driver + "): " + hairpin_error + kHairpinHint;
        return false;
    }
    if (config_.promiscuous) rte_eth_promiscuous_enable(pid);  // not every PMD has it
    if ((rc = rte_eth_dev_start(pid)) != 0) {
        error = "port " + device + " (" + p.driver + "): start failed: " + rte_strerror(-rc);
        return false;
    }
    if (p.hw_timestamp) {
        uint64_t c0 = 0, c1 = 0;
        if (rte_eth_read_clock(pid, &c0) != 0) {
            // Timestamps in unknown units are useless; use the TSC instead.
            p.hw_timestamp = false;
        } else {
            const uint64_t n0 = realtime_ns();
            std::this_thread::sleep_for(kClockCalibration);
            rte_eth_read_clock(pid, &c1);
            const uint64_t n1 = realtime_ns();
            hw_clock_.resize(RTE_MAX_ETHPORTS);
            HwClock& clock = hw_clock_[pid];
            clock.tick_base = c1;
            clock.ns_base = n1;
            clock.ns_per_tick =
                c1 > c0 ? static_cast<double>(n1 - n0) / static_cast<double>(c1 - c0) : 0.0;
            if (clock.ns_per_tick <= 0) p.hw_timestamp = false;
        }
    }
    port_index_[pid] = static_cast<int>(index);
    ports_.push_back(p);
    return true;
}

PortSource::~PortSource() {
    for (auto& lane : lanes_)
        for (rte_eth_dev_tx_buffer* b : lane->tx) {
            rte_pktmbuf_free_bulk(b->pkts, b->length);
            rte_free(b);
        }
    for (auto& lane : lanes_)
        for (auto& s : lane->staging)
            rte_pktmbuf_free_bulk(s.data(), static_cast<unsigned>(s.size()));
    for (rte_ring* r : back_) {
        rte_mbuf* m;
        while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
        rte_ring_free(r);
    }
    for (rte_ring* r : rings_) {
        rte_mbuf* m;
        while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
        rte_ring_free(r);
    }
    for (auto& o : offload_) offload::remove_plan(*o);
    for (const PortInfo& p : ports_) {
        rte_eth_dev_stop(p.id);
        rte_eth_dev_close(p.id);
    }
    rte_mempool_free(pool_);
}

// CLOCK_REALTIME itself, once per burst (vDSO, ~20-25 ns here): the clock insert-trace's
// `wall_ns` is on, so the correlator's host offsets stay constant. A TSC anchored to it at
// start drifted from it by ~400 ppm on these VMs (8 ms in the 20 s of the demo), which no
// constant offset absorbs (docs/live.md "Time").
uint64_t PortSource::now_ns() const noexcept {
    return realtime_ns();
}

void PortSource::stamp(rte_mbuf** pkts, uint16_t n, uint16_t port, uint64_t now) noexcept {
    if (!stamp_mbufs_) {
        for (uint16_t i = 0; i < n; ++i) pkts[i]->port = port;  // see below
        return;
    }
    const int idx = port_index_[port];
    const bool hw = idx >= 0 && ports_[idx].hw_timestamp;
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        m->port = port;  // not every PMD sets it (net_ring); release() routes by it
        if (hw && (m->ol_flags & timestamp_.rx_flag)) {
            const HwClock& c = hw_clock_[port];
            const int64_t ticks = static_cast<int64_t>(timestamp_.get(m) - c.tick_base);
            timestamp_.set(
                m, c.ns_base + static_cast<uint64_t>(static_cast<double>(ticks) * c.ns_per_tick));
        } else {
            timestamp_.set(m, now);
        }
    }
}

uint16_t PortSource::poll(Lane& lane, const std::vector<RxQueue>& from, rte_mbuf** pkts,
                          uint16_t n) noexcept {
    uint16_t got = 0;
    uint64_t now = 0;  // read once, for the first frames that carry it in their mbuf
    lane.burst_ns = 0;
    const unsigned k = static_cast<unsigned>(from.size());
    for (unsigned i = 0; i < k && got < n; ++i) {
        const RxQueue& rq = from[(lane.next_rx + i) % k];
        const uint16_t r = rte_eth_rx_burst(rq.port, rq.queue, pkts + got, n - got);
        if (r) {
            if (stamp_mbufs_ && now == 0) now = now_ns();
            stamp(pkts + got, r, rq.port, now);
        }
        got += r;
    }
    lane.next_rx = k ? (lane.next_rx + 1) % k : 0;
    if (got) bump(lane.counters.rx, got);
    return got;
}

void PortSource::forward(Lane& lane, rte_mbuf* m) noexcept {
    const int idx = port_index_[m->port];
    const uint16_t peer = idx >= 0 ? ports_[idx].peer : UINT16_MAX;
    if (peer == UINT16_MAX) {  // monitor
        rte_pktmbuf_free(m);
        return;
    }
    rte_eth_tx_buffer(peer, lane.tx_queue, lane.tx[port_index_[peer]], m);
    ++lane.unflushed;
}

void PortSource::flush(Lane& lane) noexcept {
    if (lane.unflushed == 0) return;
    for (unsigned i = 0; i < lane.tx.size(); ++i)
        rte_eth_tx_buffer_flush(ports_[i].id, lane.tx_queue, lane.tx[i]);
    lane.unflushed = 0;
    lane.last_flush = rte_rdtsc();
}

void PortSource::maybe_flush(Lane& lane) noexcept {
    if (lane.unflushed && rte_rdtsc() - lane.last_flush >= drain_tsc_) flush(lane);
}

// Direct mode with an emulated plan: keeps the frames bound for the worker queue in
// `pkts` (in order), forwards passthrough frames, frees dropped ones.
uint16_t PortSource::steer_emulated(Lane& lane, rte_mbuf** pkts, uint16_t n, unsigned) noexcept {
    if (!any_emulated_) return n;
    uint16_t keep = 0, pass = 0;
    uint64_t dropped = 0;
    rte_mbuf* passing[kBurst];  // n <= kBurst: the poll's burst size
    // The classifier reads every frame's headers, a miss each: keep several in flight.
    constexpr uint16_t kFramesAhead = 8;
    for (uint16_t i = 0; i < n && i < kFramesAhead; ++i)
        rte_prefetch0(rte_pktmbuf_mtod(pkts[i], const void*));
    BurstClassifier plans(offload_, port_index_);
    for (uint16_t i = 0; i < n; ++i) {
        if (i + kFramesAhead < n)
            rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kFramesAhead], const void*));
        rte_mbuf* m = pkts[i];
        offload::Decision d;
        if (!plans.classify(m, d)) {
            pkts[keep++] = m;
            continue;
        }
        if (d.kind == offload::Decision::Kind::drop) {
            rte_pktmbuf_free(m);
            ++dropped;
        } else if (d.kind == offload::Decision::Kind::queue && d.queue >= workers_) {
            passing[pass++] = m;  // out together below, in arrival order
        } else {
            pkts[keep++] = m;
        }
    }
    if (pass) {
        bump(lane.counters.passthrough, pass);
        bump(lane.counters.tx, pass);
        send(lane, passing, pass);
    }
    if (dropped) bump(lane.counters.dropped_rule, dropped);
    return keep;
}

uint64_t PortSource::burst_time_ns(unsigned q) noexcept {
    if (stamp_mbufs_) return 0;
    Lane& lane = *lanes_[q];
    if (lane.burst_ns == 0) lane.burst_ns = now_ns();
    return lane.burst_ns;
}

uint16_t PortSource::rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    Lane& lane = *lanes_[q];
    if (steer_ == SteerMode::dispatch) {
        const unsigned got =
            rte_ring_sc_dequeue_burst(rings_[q], reinterpret_cast<void**>(pkts), n, nullptr);
        if (got == 0)
            flush(lane);
        else
            maybe_flush(lane);
        return static_cast<uint16_t>(got);
    }
    if (stop_.load(std::memory_order_relaxed)) {
        flush(lane);
        lane.finished.store(true, std::memory_order_release);
        return 0;
    }
    n = std::min(n, kBurst);  // steer_emulated's passthrough array holds one burst
    for (;;) {
        const uint16_t raw = poll(lane, lane.rx, pkts, n);
        if (raw == 0) {
            flush(lane);
            return 0;
        }
        const uint16_t got = steer_ == SteerMode::direct ? steer_emulated(lane, pkts, raw, 0) : raw;
        maybe_flush(lane);
        // Only passthrough this time: poll again rather than report an empty queue, which
        // would send the worker into its idle back-off while traffic flows.
        if (got != 0 || stop_.load(std::memory_order_relaxed)) return got;
    }
}

void PortSource::release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    if (config_.mode == PortMode::monitor) {
        rte_pktmbuf_free_bulk(pkts, n);
        return;
    }
    Lane& lane = *lanes_[q];
    if (!back_.empty()) {
        unsigned sent = 0;
        Backoff full;
        while (sent < n) {
            sent += rte_ring_sp_enqueue_burst(back_[q], reinterpret_cast<void**>(pkts + sent),
                                              n - sent, nullptr);
            if (sent < n) {
                bump(lane.counters.ring_waits, 1);
                full.pause();
            }
        }
        return;
    }
    bump(lane.counters.tx, n);
    send(lane, pkts, n);
}

void PortSource::send(Lane& lane, rte_mbuf** pkts, uint16_t n) noexcept {
    // Fast path (l2fwd/testpmd io style): a whole burst from one port with nothing buffered
    // for its peer goes out in one tx_burst, without copying through the Tx buffer.
    const uint16_t from = pkts[0]->port;
    bool one_port = true;
    for (uint16_t i = 1; i < n && one_port; ++i) one_port = pkts[i]->port == from;
    const int idx = port_index_[from];
    if (one_port && idx >= 0 && n >= kBurst / 2 && ports_[idx].peer != UINT16_MAX) {
        const uint16_t peer = ports_[idx].peer;
        rte_eth_dev_tx_buffer* buf = lane.tx[port_index_[peer]];
        if (buf->length == 0) {
            const uint16_t sent = rte_eth_tx_burst(peer, lane.tx_queue, pkts, n);
            if (sent < n) on_tx_full(pkts + sent, n - sent, buf->error_userdata);
            return;
        }
    }
    for (uint16_t i = 0; i < n; ++i) forward(lane, pkts[i]);
}

bool PortSource::drained(unsigned q) const noexcept {
    if (steer_ == SteerMode::dispatch) {
        const bool d = done_.load(std::memory_order_acquire) && rte_ring_empty(rings_[q]);
        // Tells the main lcore this worker will release nothing more (return rings).
        if (d) lanes_[q]->finished.store(true, std::memory_order_release);
        return d;
    }
    // done_ too: the worker finishes its engine with end_ns(), set when run() returns.
    return lanes_[q]->finished.load(std::memory_order_acquire) &&
           done_.load(std::memory_order_acquire);
}

bool PortSource::dispatch_loop() {
    Lane& lane = *lanes_[workers_];
    rte_mbuf* pkts[kBurst];
    Backoff idle(kLivePollBackoff);  // as the workers (WorkerConfig::idle)
    const auto deliver = [&](unsigned q) {
        std::vector<rte_mbuf*>& s = lane.staging[q];
        unsigned sent = 0;
        Backoff full;
        while (sent < s.size()) {
            sent += rte_ring_sp_enqueue_burst(rings_[q], reinterpret_cast<void**>(s.data() + sent),
                                              static_cast<unsigned>(s.size()) - sent, nullptr);
            if (sent < s.size()) {
                // Back-pressure: the worker is behind. Waiting stalls Rx (the port then
                // counts what it cannot take as imissed) but loses nothing already taken.
                bump(lane.counters.ring_waits, 1);
                full.pause();
            }
        }
        s.clear();
    };
    const auto drain_back = [&]() {
        unsigned total = 0;
        for (unsigned q = 0; q < back_.size(); ++q) {
            rte_mbuf* out[kBurst];
            const unsigned k =
                rte_ring_sc_dequeue_burst(back_[q], reinterpret_cast<void**>(out), kBurst, nullptr);
            for (unsigned j = 0; j < k; ++j) forward(lane, out[j]);
            if (k) bump(lanes_[q]->counters.tx, k);
            total += k;
        }
        return total;
    };
    while (!stop_.load(std::memory_order_relaxed)) {
        const unsigned returned = drain_back();
        const uint16_t got = poll(lane, all_rx_, pkts, kBurst);
        if (got == 0) {
            if (returned == 0) {
                flush(lane);
                idle.pause();
            } else {
                maybe_flush(lane);
            }
            continue;
        }
        idle.reset();
        uint64_t pass = 0, dropped = 0;
        BurstClassifier plans(offload_, port_index_);
        for (uint16_t i = 0; i < got; ++i) {
            rte_mbuf* m = pkts[i];
            unsigned q = 0;
            offload::Decision d;
            if (plans.classify(m, d)) {
                if (d.kind == offload::Decision::Kind::drop) {
                    rte_pktmbuf_free(m);
                    ++dropped;
                    continue;
                }
                if (d.kind == offload::Decision::Kind::queue && d.queue >= workers_) {
                    forward(lane, m);
                    ++pass;
                    continue;
                }
                q = d.kind == offload::Decision::Kind::queue ? d.queue : 0;
            } else {
                const std::span<const uint8_t> frame(rte_pktmbuf_mtod(m, const uint8_t*),
                                                     m->data_len);
                q = shard_index(shard_hash(frame, config_.policy), workers_);
            }
            lane.staging[q].push_back(m);
            if (lane.staging[q].size() == kBurst) deliver(q);
        }
        for (unsigned q = 0; q < workers_; ++q)
            if (!lane.staging[q].empty()) deliver(q);
        if (pass) {
            bump(lane.counters.passthrough, pass);
            bump(lane.counters.tx, pass);
        }
        if (dropped) bump(lane.counters.dropped_rule, dropped);
        maybe_flush(lane);
    }
    for (unsigned q = 0; q < workers_; ++q)
        if (!lane.staging[q].empty()) deliver(q);
    if (!back_.empty()) {
        // The workers still process what the rings hold: keep transmitting what they hand
        // back until every one of them is done, so nothing taken in is lost at stop.
        end_ns_.store(now_ns(), std::memory_order_release);
        done_.store(true, std::memory_order_release);
        for (;;) {
            bool all = true;
            for (unsigned q = 0; q < workers_; ++q)
                all = all && lanes_[q]->finished.load(std::memory_order_acquire);
            if (drain_back() == 0) {
                if (all) break;
                flush(lane);
                idle.pause();
            }
        }
    }
    flush(lane);
    return true;
}

bool PortSource::run(std::string&) {
    if (steer_ == SteerMode::dispatch) {
        dispatch_loop();
    } else if (steer_ == SteerMode::hardware) {
        Lane& lane = *lanes_[workers_];
        rte_mbuf* pkts[kBurst];
        Backoff idle(kLivePollBackoff);  // as the workers (WorkerConfig::idle)
        while (!stop_.load(std::memory_order_relaxed)) {
            const uint16_t got = poll(lane, pass_rx_, pkts, kBurst);
            if (got == 0) {
                flush(lane);
                idle.pause();
                continue;
            }
            idle.reset();
            for (uint16_t i = 0; i < got; ++i) forward(lane, pkts[i]);
            bump(lane.counters.passthrough, got);
            bump(lane.counters.tx, got);
            maybe_flush(lane);
        }
        flush(lane);
    } else {
        // Direct: the worker polls the ports; the main lcore only waits for the stop.
        while (!stop_.load(std::memory_order_relaxed)) std::this_thread::sleep_for(kIdleMainSleep);
    }
    if (end_ns_.load(std::memory_order_acquire) == 0)
        end_ns_.store(now_ns(), std::memory_order_release);
    done_.store(true, std::memory_order_release);
    return true;
}

const LaneCounters& PortSource::lane(unsigned i) const {
    return lanes_[i]->counters;
}

uint64_t PortSource::received() const {
    uint64_t n = 0;
    for (const auto& l : lanes_) n += l->counters.rx.load(std::memory_order_relaxed);
    return n;
}

uint64_t PortSource::passthrough() const {
    uint64_t n = 0;
    for (const auto& l : lanes_) n += l->counters.passthrough.load(std::memory_order_relaxed);
    return n;
}

SourceProgress PortSource::progress() const noexcept {
    SourceProgress p;
    p.frames = received();
    p.fraction = -1;
    return p;
}

}  // namespace insert::pipeline
