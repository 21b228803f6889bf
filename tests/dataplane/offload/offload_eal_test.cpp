// rte_flow validate/fallback on PMDs without rte_flow, and PortSource end to end over pcap
// vdevs, in one EAL process (--no-huge, its own --file-prefix, vdevs only; root not needed
// except for af_packet on lo, which is skipped without CAP_NET_RAW).
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/offload/flow_installer.hpp"
#include "dataplane/pipeline/file_source.hpp"
#include "dataplane/pipeline/pipeline.hpp"
#include "dataplane/ports/port_source.hpp"
#include "dataplane/state/engine.hpp"

namespace insert {
namespace {

namespace fs = std::filesystem;

fs::path g_tmp;
std::string g_pcap;  // pcaps/rc_mixed.pcap
bool g_have_af_packet = false;
pipeline::MbufTimestamp g_ts;

std::vector<std::string> rx_only_devices() {
    std::vector<std::string> d = {"net_null0", "net_ring0", "net_pcap0"};
    if (g_have_af_packet) d.push_back("net_af_packet0");
    return d;
}

bool start_port(uint16_t port, uint16_t queues, rte_mempool* pool) {
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port, queues, queues, &conf) != 0) return false;
    for (uint16_t q = 0; q < queues; ++q) {
        if (rte_eth_rx_queue_setup(port, q, 256, SOCKET_ID_ANY, nullptr, pool) != 0) return false;
        if (rte_eth_tx_queue_setup(port, q, 256, SOCKET_ID_ANY, nullptr) != 0) return false;
    }
    return rte_eth_dev_start(port) == 0;
}

TEST(OffloadFallback, pmds_without_rte_flow_refuse_every_rule_and_get_the_emulation) {
    rte_mempool* pool = rte_pktmbuf_pool_create("fallback_pool", 4096, 64, 0, 2176, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
    for (const std::string& name : rx_only_devices()) {
        SCOPED_TRACE(name);
        uint16_t port = 0;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &port), 0);
        ASSERT_TRUE(start_port(port, 1, pool));
        const offload::NicCaps caps = offload::read_caps(port, 1);
        const offload::RulePlan plan = offload::build_insert_rules(caps);
        ASSERT_EQ(plan.rules.size(), 7u);

        offload::OffloadState automatic;
        std::string error;
        ASSERT_TRUE(
            offload::install_plan(port, plan, offload::OffloadMode::automatic, automatic, error))
            << error;
        EXPECT_FALSE(automatic.hardware);
        EXPECT_TRUE(automatic.emulated);
        EXPECT_EQ(automatic.refused, 7u) << "every refused rule is counted";
        EXPECT_FALSE(automatic.reason.empty());
        EXPECT_TRUE(automatic.flows.empty());
        EXPECT_EQ(automatic.classifier.size(), 7u);

        offload::OffloadState required;
        EXPECT_FALSE(
            offload::install_plan(port, plan, offload::OffloadMode::require, required, error));
        EXPECT_NE(error.find("refused 7 of 7"), std::string::npos) << error;

        offload::OffloadState off;
        ASSERT_TRUE(offload::install_plan(port, plan, offload::OffloadMode::off, off, error));
        EXPECT_FALSE(off.emulated);
        EXPECT_EQ(off.refused, 0u) << "off tries nothing";

        rte_eth_dev_stop(port);
    }
}

// Reads every frame of a capture.
std::vector<std::vector<uint8_t>> frames_of(const std::string& path) {
    std::vector<std::vector<uint8_t>> out;
    capture::CaptureFile f;
    if (!f.open(path)) return out;
    capture::Frame fr;
    while (f.next(fr)) out.emplace_back(fr.data.begin(), fr.data.end());
    return out;
}

// Replay of the same capture through FileSource: the reference counts.
exporter::SummaryCounts replay_counts(unsigned workers) {
    capture::CaptureFile file;
    EXPECT_TRUE(file.open(g_pcap));
    std::string error;
    pipeline::FileSourceConfig fc;
    fc.workers = workers;
    auto src = pipeline::FileSource::create(std::move(file), fc, g_ts, error);
    pipeline::PipelineConfig pc;
    pc.make_engine = &state::Engine::create;
    auto pipe = pipeline::Pipeline::create(pc, *src, g_ts, error);
    EXPECT_TRUE(pipe) << error;
    EXPECT_TRUE(pipe->launch(error));
    src->run(error);
    pipe->wait();
    return pipe->totals(1);
}

// The inline path over two pcap ports: frames read from in.pcap on port 0 must leave port 1
// (written to out1.pcap) unchanged and in order, and the telemetry must count what replay counts.
void inline_over_pcap(unsigned workers, offload::OffloadMode mode, const std::string& tag,
                      bool single_queue = false) {
    // One pcap file per queue: queue 0 of port a reads the capture, every other Rx queue an
    // empty one; each Tx queue writes its own file.
    const std::string empty = (g_tmp / "empty.pcap").string();
    const std::string a = "net_pcap_a" + tag, b = "net_pcap_b" + tag;
    std::string args_a, args_b;
    std::vector<std::string> out0, out1;
    const unsigned queues = single_queue ? 1 : workers + 1;
    for (unsigned q = 0; q < queues; ++q) {
        out0.push_back((g_tmp / ("out0_" + tag + "_" + std::to_string(q) + ".pcap")).string());
        out1.push_back((g_tmp / ("out1_" + tag + "_" + std::to_string(q) + ".pcap")).string());
        const char* sep = q ? "," : "";
        args_a.append(sep).append("rx_pcap=").append(q == 0 ? g_pcap : empty);
        args_b.append(sep).append("rx_pcap=").append(empty);
    }
    for (unsigned q = 0; q < queues; ++q) {
        args_a += ",tx_pcap=" + out0[q];
        args_b += ",tx_pcap=" + out1[q];
    }
    ASSERT_EQ(rte_eal_hotplug_add("vdev", a.c_str(), args_a.c_str()), 0);
    ASSERT_EQ(rte_eal_hotplug_add("vdev", b.c_str(), args_b.c_str()), 0);
    const auto expected = frames_of(g_pcap);
    ASSERT_FALSE(expected.empty());
    {
        ports::PortSourceConfig cfg;
        cfg.mode = ports::PortMode::inline_pair;
        cfg.devices = {a, b};
        cfg.workers = workers;
        cfg.offload = mode;
        cfg.rx_desc = cfg.tx_desc = 256;
        cfg.worker_ring = 256;
        std::string error;
        auto src = ports::PortSource::create(cfg, g_ts, error);
        ASSERT_TRUE(src) << error;
        EXPECT_EQ(src->steer(),
                  workers == 1 ? ports::SteerMode::direct : ports::SteerMode::dispatch);
        EXPECT_EQ(src->offload(0).emulated, mode != offload::OffloadMode::off);
        pipeline::PipelineConfig pc;
        pc.make_engine = &state::Engine::create;
        auto pipe = pipeline::Pipeline::create(pc, *src, g_ts, error);
        ASSERT_TRUE(pipe) << error;
        ASSERT_TRUE(pipe->launch(error)) << error;
        std::thread stopper([&] {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while (src->received() < expected.size() && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            src->stop();
        });
        src->run(error);
        pipe->wait();
        stopper.join();
        EXPECT_EQ(src->received(), expected.size());
        const exporter::SummaryCounts live = pipe->totals(1);
        const exporter::SummaryCounts ref = replay_counts(workers);
        const uint64_t pass = src->passthrough();
        EXPECT_EQ(live.pkts + pass, ref.pkts);
        EXPECT_EQ(live.roce_pkts, ref.roce_pkts);
        EXPECT_EQ(live.non_roce_pkts + pass, ref.non_roce_pkts);
        EXPECT_EQ(live.msgs, ref.msgs);
        EXPECT_EQ(live.endpoints, ref.endpoints);
        EXPECT_EQ(live.connections, ref.connections);
        uint64_t dropped = 0;
        for (unsigned l = 0; l < src->lanes(); ++l) dropped += src->lane(l).tx_dropped.load();
        EXPECT_EQ(dropped, 0u);
        pipe.reset();
        src.reset();  // closes the ports: the pcap PMD flushes out1.pcap
    }
    rte_eal_hotplug_remove("vdev", a.c_str());
    rte_eal_hotplug_remove("vdev", b.c_str());
    std::vector<std::vector<uint8_t>> got, back;
    for (const std::string& f : out1) {
        auto part = frames_of(f);
        got.insert(got.end(), part.begin(), part.end());
    }
    for (const std::string& f : out0) {
        auto part = frames_of(f);
        back.insert(back.end(), part.begin(), part.end());
    }
    ASSERT_EQ(got.size(), expected.size());
    if (workers == 1) {
        for (std::size_t i = 0; i < got.size(); ++i)
            EXPECT_EQ(got[i], expected[i]) << "frame " << i + 1;
    } else {
        // Several workers keep the order per flow only: compare as multisets here (the
        // netns test checks per-flow order).
        // (Frames compared with memcmp: GCC 12 warns falsely on vector<uint8_t>'s <=>.)
        const auto frame_less = [](const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
            const int c = std::memcmp(x.data(), y.data(), std::min(x.size(), y.size()));
            return c != 0 ? c < 0 : x.size() < y.size();
        };
        auto g = got, e = expected;
        std::sort(g.begin(), g.end(), frame_less);
        std::sort(e.begin(), e.end(), frame_less);
        EXPECT_EQ(g, e);
    }
    EXPECT_TRUE(back.empty()) << "nothing flows back";
}

TEST(PortSourceInline, one_worker_emulated_offload_forwards_every_frame_in_order) {
    inline_over_pcap(1, offload::OffloadMode::automatic, "1a");
}

TEST(PortSourceInline, one_worker_offload_off_forwards_every_frame_in_order) {
    inline_over_pcap(1, offload::OffloadMode::off, "1o");
}

TEST(PortSourceInline, two_workers_dispatch_forwards_every_frame_once) {
    inline_over_pcap(2, offload::OffloadMode::automatic, "2a");
}

TEST(PortSourceInline, single_queue_ports_with_two_workers_transmit_from_the_main_lcore) {
    inline_over_pcap(2, offload::OffloadMode::off, "2s", /*single_queue=*/true);
}

}  // namespace
}  // namespace insert

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const char* root = std::getenv("INSERT_SOURCE_ROOT");
    insert::g_pcap =
        (std::filesystem::path(root ? root : ".") / "pcaps" / "rc_mixed.pcap").string();
    insert::g_tmp =
        std::filesystem::temp_directory_path() / ("insert-live-eal-" + std::to_string(getpid()));
    std::filesystem::create_directories(insert::g_tmp);
    {
        // An empty capture (header only) for a port that must receive nothing.
        std::ofstream e(insert::g_tmp / "empty.pcap", std::ios::binary);
        const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
        e.write(reinterpret_cast<const char*>(hdr), sizeof hdr);
    }
    const int fd = ::socket(AF_PACKET, SOCK_RAW, 0);
    insert::g_have_af_packet = fd >= 0;
    if (fd >= 0) ::close(fd);
    const std::string prefix = "--file-prefix=insert-live-eal-" + std::to_string(getpid());
    std::vector<std::string> args = {
        "offload_eal_test",
        "--no-huge",
        "-m",
        "512",
        prefix,
        "--no-pci",
        "--lcores=(0-2)@(" + std::string("0") + ")",
        "--log-level=3",
        "--no-telemetry",
        "--vdev=net_null0",
        "--vdev=net_ring0",
        "--vdev=net_pcap0,rx_pcap=" + insert::g_pcap + ",tx_pcap=/dev/null"};
    // Lcores float over the CPUs we may use.
    {
        cpu_set_t set;
        CPU_ZERO(&set);
        std::string cpus;
        if (sched_getaffinity(0, sizeof set, &set) == 0)
            for (int c = 0; c < CPU_SETSIZE; ++c)
                if (CPU_ISSET(c, &set))
                    cpus.append(cpus.empty() ? "" : ",").append(std::to_string(c));
        args[6] = "--lcores=(0-2)@(" + (cpus.empty() ? std::string("0") : cpus) + ")";
    }
    if (insert::g_have_af_packet) args.push_back("--vdev=net_af_packet0,iface=lo");
    std::vector<char*> argv2;
    for (auto& a : args) argv2.push_back(a.data());
    if (rte_eal_init(static_cast<int>(argv2.size()), argv2.data()) < 0) {
        std::fprintf(stderr, "EAL init failed\n");
        return 1;
    }
    std::string error;
    if (!insert::g_ts.register_field(error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    const int rc = RUN_ALL_TESTS();
    rte_eal_cleanup();
    std::filesystem::remove_all(insert::g_tmp);
    std::filesystem::remove_all("/var/run/dpdk/" +
                                prefix.substr(std::string("--file-prefix=").size()));
    return rc;
}
