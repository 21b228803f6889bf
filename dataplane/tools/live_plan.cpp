#include "dataplane/tools/live_plan.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/ports/af_packet.hpp"
#include "dataplane/ports/pci_port.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/state/records.hpp"
#include "dataplane/tools/memory_budget.hpp"

namespace insert::tools {

namespace {

constexpr uint64_t kMiB = 1u << 20;
constexpr uint32_t kEthernetFrame = 1518;  // the largest frame of a 1500-byte MTU

bool has_eal_option(const std::vector<std::string>& args, const std::string& opt) {
    for (const std::string& a : args)
        if (a == opt || a.rfind(opt + "=", 0) == 0) return true;
    return false;
}

// No rights to open packet sockets fails here with one line, not deep inside EAL.
bool can_open_packet_socket(std::string& why) {
    const int fd = ::socket(AF_PACKET, SOCK_RAW, 0);
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    why = std::strerror(errno);
    return false;
}

// The af_packet settings for the interfaces (from the largest MTU), checked.
bool plan_interfaces(const char* name, bool is_inline, const LiveOptions& opt,
                     ports::AfPacketGeometry& geometry, std::string& error) {
    uint32_t max_mtu = 0, min_mtu = UINT32_MAX;
    for (const std::string& iface : opt.ifaces) {
        uint32_t mtu = 0;
        if (!ports::interface_mtu(iface, mtu, error)) return false;
        max_mtu = std::max(max_mtu, mtu);
        min_mtu = std::min(min_mtu, mtu);
    }
    if (opt.ifaces.empty()) return true;
    std::string why;
    if (!can_open_packet_socket(why)) {
        error = "no permission to open packet sockets on " + opt.ifaces.front() + " (" + why +
                "): run as root or with CAP_NET_RAW";
        return false;
    }
    geometry = ports::af_packet_geometry(max_mtu);
    if (!ports::check_geometry(geometry, error)) return false;
    if (is_inline && min_mtu != max_mtu)
        std::fprintf(stderr,
                     "%s: warning: MTUs differ (%u and %u); frames above %u cannot leave "
                     "the smaller side and are counted as Tx errors\n",
                     name, min_mtu, max_mtu, min_mtu);
    return true;
}

// --telemetry-prefix NAME that a running process serves telemetry under is refused: DPDK
// would give this one a second socket (dpdk_telemetry.v2:1) that dpdk-telemetry.py -f NAME
// does not look for, and the first of the two to stop would remove the other's directory.
bool check_telemetry_prefix(const LiveOptions& opt, std::string& error) {
    if (opt.telemetry_prefix.empty()) return true;
    const std::string path = "/var/run/dpdk/" + opt.telemetry_prefix + "/dpdk_telemetry.v2";
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) {
        error = "--telemetry-prefix " + opt.telemetry_prefix + ": name too long";
        return false;
    }
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return true;
    const bool answers = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (answers)
        error = "--telemetry-prefix " + opt.telemetry_prefix + ": in use by a running process (" +
                path + " answers)";
    return !answers;
}

// NIC ports: canonical addresses, each once, and root.
bool check_pci_ports(LiveOptions& opt, std::string& error) {
    for (std::string& p : opt.pci) {
        std::string canonical;
        if (!ports::check_pci_port(p, canonical, error)) return false;
        p = canonical;
    }
    if (std::string dup; find_duplicate(opt.pci, dup)) {  // two spellings of one address
        error = "--port " + dup + " given twice (each port once)";
        return false;
    }
    if (!opt.pci.empty() && ::geteuid() != 0) {
        error = "NIC ports (--port) need root";
        return false;
    }
    return true;
}

// The ports' configuration and one EAL device per port, in the order given.
void plan_ports(ports::PortMode mode, const LiveOptions& opt,
                const ports::AfPacketGeometry& geometry, LivePlan& plan) {
    ports::PortSourceConfig& pc = plan.ports;
    pc.mode = mode;
    pc.workers = opt.workers;
    pc.offload = *offload::parse_offload_mode(opt.offload);
    pc.hairpin = !opt.no_hairpin;
    pc.policy = *pipeline::parse_shard_policy(opt.shard);
    pc.max_frame = std::max<uint32_t>(opt.ifaces.empty() ? kEthernetFrame : geometry.max_frame(),
                                      kEthernetFrame);
    pc.mbuf_data_room =
        std::max<uint32_t>(opt.ifaces.empty() ? RTE_MBUF_DEFAULT_BUF_SIZE : geometry.mbuf_data_room,
                           RTE_MBUF_DEFAULT_BUF_SIZE);
    if (opt.pci.empty()) {
        // Software ports do not pre-post receive buffers: smaller pools do.
        pc.rx_desc = 512;
        pc.tx_desc = 512;
    }
    plan.eal_args = opt.eal_args;
    for (std::size_t i = 0; i < opt.ifaces.size(); ++i) {
        const std::string dev = "net_af_packet" + std::to_string(i);
        plan.eal_args.push_back("--vdev=" +
                                ports::af_packet_devargs(dev, opt.ifaces[i], 1, geometry));
        pc.devices.push_back(dev);
    }
    for (const std::string& v : opt.vdevs) {
        plan.eal_args.push_back("--vdev=" + v);
        pc.devices.push_back(v.substr(0, v.find(',')));
    }
    for (const std::string& p : opt.pci) {
        plan.eal_args.push_back("-a");
        plan.eal_args.push_back(p);
        pc.devices.push_back(p);
    }
    if (!has_eal_option(plan.eal_args, "--no-telemetry") &&
        !has_eal_option(plan.eal_args, "--telemetry"))
        plan.eal_args.push_back("--telemetry");
    // --telemetry-prefix: a file prefix that stays the same from run to run, so that
    // dpdk-telemetry.py -f NAME (and any collector) finds the socket without reading the
    // start line (live_options.cpp refused it beside EAL's own --file-prefix).
    if (!opt.telemetry_prefix.empty())
        plan.eal_args.push_back("--file-prefix=" + opt.telemetry_prefix);
    // Errors only from DPDK's libraries and drivers (PMDs are chatty at info), INSERT's
    // components at their registered levels (dataplane/common/log.hpp). By type pattern,
    // not the global level, which would cap INSERT's warnings too.
    if (!has_eal_option(plan.eal_args, "--log-level")) {
        plan.eal_args.push_back("--log-level=*:error");
        plan.eal_args.push_back("--log-level=insert.*:info");
    }
}

// Mbufs and record rings (through DPDK): hugepages must hold them when they are required.
bool plan_buffers(const LiveOptions& opt, LivePlan& plan, std::string& error) {
    const ports::PortSourceConfig& pc = plan.ports;
    const uint64_t queues = opt.workers + 1;
    const uint64_t mbufs =
        opt.ports() * queues * (pc.rx_desc + pc.tx_desc) + opt.workers * pc.worker_ring + 16384;
    plan.memory_bytes = mbufs * (pc.mbuf_data_room + 256) +
                        uint64_t{opt.workers} * opt.record_ring * sizeof(state::Record) + 64 * kMiB;
    plan.need_huge = opt.hugepages || !opt.pci.empty();
    if (!plan.need_huge) return true;
    if (has_eal_option(plan.eal_args, "--no-huge")) {
        error = "--hugepages/--port conflict with --no-huge";
        return false;
    }
    const uint64_t free = pipeline::free_hugepage_bytes();
    if (free < plan.memory_bytes + 64 * kMiB) {
        error = "hugepages missing: " + std::to_string((plan.memory_bytes + 64 * kMiB) / kMiB) +
                " MiB needed, " + std::to_string(free / kMiB) +
                " MiB free (echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)";
        return false;
    }
    return true;
}

// The engines' tables are locked resident at start: they must leave the system room.
bool check_engine_memory(const LiveOptions& opt, const LivePlan& plan, std::string& error) {
    const uint64_t buffers = plan.need_huge ? 0 : plan.memory_bytes;
    state::EngineConfig engine;
    engine.max_endpoints = opt.max_endpoints;
    const uint64_t per_worker = state::Engine::memory_bytes(engine);
    const uint64_t need = per_worker * opt.workers + buffers;
    const uint64_t available = available_memory_bytes();
    if (memory_fits(need, available, true)) return true;
    uint32_t lo = 0, hi = opt.max_endpoints;  // the most that fit: in [lo, hi)
    while (hi - lo > 1) {
        engine.max_endpoints = lo + (hi - lo) / 2;
        const uint64_t n = state::Engine::memory_bytes(engine) * opt.workers + buffers;
        (memory_fits(n, available, true) ? lo : hi) = engine.max_endpoints;
    }
    error = "--max-endpoints " + std::to_string(opt.max_endpoints) + " needs " +
            format_bytes(need) + " resident (" + std::to_string(opt.workers) + " worker" +
            (opt.workers == 1 ? "" : "s") + " x " + format_bytes(per_worker) + " of state" +
            (plan.need_huge ? "" : " and " + format_bytes(plan.memory_bytes) + " of buffers") +
            "), only " + format_bytes(available) +
            " available and the system needs room: at most " + std::to_string(lo) +
            " endpoints per worker fit";
    return false;
}

}  // namespace

bool plan_live(const char* name, ports::PortMode mode, LiveOptions& opt, LivePlan& plan,
               std::string& error) {
    const bool is_inline = mode == ports::PortMode::inline_pair;
    const std::size_t nports = opt.ports();
    if (is_inline && nports != 2) {
        error =
            "needs exactly two ports (--iface, --vdev or --port), got " + std::to_string(nports);
        return false;
    }
    if (nports == 0) {
        error = "needs at least one port (--iface, --vdev or --port)";
        return false;
    }
    ports::AfPacketGeometry geometry;
    if (!plan_interfaces(name, is_inline, opt, geometry, error) || !check_pci_ports(opt, error) ||
        !check_telemetry_prefix(opt, error))
        return false;
    plan_ports(mode, opt, geometry, plan);
    return plan_buffers(opt, plan, error) && check_engine_memory(opt, plan, error);
}

}  // namespace insert::tools
