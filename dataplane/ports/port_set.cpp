#include "dataplane/ports/port_set.hpp"

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "dataplane/offload/flow_rules.hpp"
#include "dataplane/pipeline/dpdk_name.hpp"
#include "dataplane/ports/hairpin.hpp"

namespace insert::ports {

namespace {

constexpr unsigned kPoolCache = 256;
constexpr const char* kHairpinHint =
    " (run with --no-hairpin to forward non-RoCE frames in software)";
// Device ticks counted against CLOCK_REALTIME over this long (per port, at start-up).
constexpr auto kClockCalibration = std::chrono::milliseconds(20);

}  // namespace

uint64_t realtime_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::unique_ptr<PortSet> PortSet::open(const PortSourceConfig& config, std::string& error) {
    std::unique_ptr<PortSet> set(new PortSet());
    set->index_.assign(RTE_MAX_ETHPORTS, -1);
    if (!set->create_pool(config, error)) return nullptr;
    for (unsigned i = 0; i < config.devices.size(); ++i)
        if (!set->open_port(config, i, error)) return nullptr;
    if (config.mode == PortMode::inline_pair) {
        PortInfo& a = set->ports_[0];
        PortInfo& b = set->ports_[1];
        a.peer = b.id;
        b.peer = a.id;
        if (a.hairpin && b.hairpin && !bind_hairpin(a.id, b.id, error)) {
            error += kHairpinHint;
            return nullptr;
        }
    }
    return set;
}

bool PortSet::create_pool(const PortSourceConfig& config, std::string& error) {
    // Every mbuf may sit in an Rx or Tx ring, a worker ring (dispatch), a lane's Tx buffer
    // or a per-lcore mempool cache (up to 1.5x its size).
    const unsigned nports = static_cast<unsigned>(config.devices.size());
    const unsigned queues = config.workers + 1;
    const unsigned lanes = config.workers + 1;
    const unsigned mbufs = nports * queues * (config.rx_desc + config.tx_desc) +
                           config.workers * config.worker_ring + lanes * nports * kBurst +
                           rte_lcore_count() * kPoolCache * 3 / 2 + 4096;
    pool_ = rte_pktmbuf_pool_create(pipeline::dpdk_name("port", this).c_str(), mbufs, kPoolCache, 0,
                                    static_cast<uint16_t>(config.mbuf_data_room),
                                    static_cast<int>(rte_socket_id()));
    if (pool_ == nullptr) {
        error = "cannot allocate " + std::to_string(mbufs) + " mbufs of " +
                std::to_string(config.mbuf_data_room) + " B: " + rte_strerror(rte_errno) +
                " (more hugepages, or -m with --no-huge)";
        return false;
    }
    return true;
}

bool PortSet::open_port(const PortSourceConfig& config, unsigned index, std::string& error) {
    const std::string& device = config.devices[index];
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
    unsigned queues = config.workers + 1;
    if (info.max_rx_queues >= 1 && info.max_tx_queues >= 1 &&
        (info.max_rx_queues < queues || info.max_tx_queues < queues) &&
        std::min(info.max_rx_queues, info.max_tx_queues) == 1) {
        queues = 1;
        single_tx_ = true;
    }
    if (info.max_rx_queues < queues || info.max_tx_queues < queues) {
        error = "port " + device + " (" + p.driver + ") has " + std::to_string(info.max_rx_queues) +
                " Rx / " + std::to_string(info.max_tx_queues) + " Tx queues; " +
                std::to_string(config.workers) + " workers need " + std::to_string(queues) +
                " (one per worker and one for passthrough)";
        return false;
    }
    p.queues = static_cast<uint16_t>(queues);
    // Hardware hairpin (inline, both ports capable, not a single-queue port): one more
    // queue pair, at index `queues`, that the passthrough rule targets.
    uint16_t peer_pid = UINT16_MAX;
    if (config.hairpin && config.mode == PortMode::inline_pair && !single_tx_ &&
        rte_eth_dev_get_port_by_name(config.devices[1 - index].c_str(), &peer_pid) == 0 &&
        hairpin_capable(pid) && hairpin_capable(peer_pid))
        p.hairpin = true;
    const auto configured = static_cast<uint16_t>(queues + (p.hairpin ? 1 : 0));
    // af_packet reports 1518 whatever its ring slots hold; its limit is the slot size,
    // which check_geometry() verified against the MTU.
    const bool af_packet = p.driver == "net_af_packet";
    if (!af_packet && info.max_rx_pktlen != 0 && info.max_rx_pktlen < config.max_frame) {
        error = "port " + device + " (" + p.driver + ") receives frames of at most " +
                std::to_string(info.max_rx_pktlen) + " B; the MTU needs " +
                std::to_string(config.max_frame);
        return false;
    }
    const uint32_t room = config.mbuf_data_room - RTE_PKTMBUF_HEADROOM;
    if (room < config.max_frame) {
        error = "mbufs of " + std::to_string(config.mbuf_data_room) + " B cannot hold a " +
                std::to_string(config.max_frame) + "-byte frame";
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
    if (config.max_frame > RTE_ETHER_MAX_LEN && !af_packet) {
        // af_packet takes the interface's MTU as it is; a NIC needs its MTU raised.
        conf.rxmode.mtu = config.max_frame - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
    }
    int rc = rte_eth_dev_configure(pid, configured, configured, &conf);
    if (rc != 0) {
        error = "port " + device + " (" + p.driver + "): configure failed: " + rte_strerror(-rc);
        return false;
    }
    uint16_t rxd = config.rx_desc, txd = config.tx_desc;
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
    if (config.promiscuous) rte_eth_promiscuous_enable(pid);  // not every PMD has it
    if ((rc = rte_eth_dev_start(pid)) != 0) {
        error = "port " + device + " (" + p.driver + "): start failed: " + rte_strerror(-rc);
        return false;
    }
    if (p.hw_timestamp) calibrate_clock(p);
    index_[pid] = static_cast<int>(index);
    ports_.push_back(p);
    return true;
}

// The device clock's rate and origin against CLOCK_REALTIME; a port whose clock cannot be
// read has timestamps in unknown units, so it is stamped like any other port instead.
void PortSet::calibrate_clock(PortInfo& port) {
    uint64_t c0 = 0, c1 = 0;
    if (rte_eth_read_clock(port.id, &c0) != 0) {
        port.hw_timestamp = false;
        return;
    }
    const uint64_t n0 = realtime_ns();
    std::this_thread::sleep_for(kClockCalibration);
    rte_eth_read_clock(port.id, &c1);
    const uint64_t n1 = realtime_ns();
    hw_clock_.resize(RTE_MAX_ETHPORTS);
    HwClock& clock = hw_clock_[port.id];
    clock.tick_base = c1;
    clock.ns_base = n1;
    clock.ns_per_tick = c1 > c0 ? static_cast<double>(n1 - n0) / static_cast<double>(c1 - c0) : 0.0;
    if (clock.ns_per_tick <= 0) port.hw_timestamp = false;
}

bool PortSet::any_hw_timestamp() const {
    return std::any_of(ports_.begin(), ports_.end(),
                       [](const PortInfo& p) { return p.hw_timestamp; });
}

PortSet::~PortSet() {
    for (const PortInfo& p : ports_) {
        rte_eth_dev_stop(p.id);
        rte_eth_dev_close(p.id);
    }
    rte_mempool_free(pool_);
}

}  // namespace insert::ports
