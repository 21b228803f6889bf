// Every built-in scenario (scaled down) dissected by tshark: each well-formed RoCE frame
// must decode with the opcode, destination QP and PSN the generator sent, carry no expert
// info (malformed packet, bad length, checksum...), and CM MADs must show as CM REQ/REP
// with the right Local QPN and Starting PSN. tshark 4.0 does not check the ICRC (the
// InfiniBand dissector registers no expert info for it), so the ICRC of every frame is
// verified here with proto::verify_icrc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/generator.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::gen {
namespace {

struct Expected {
    uint8_t opcode;
    uint32_t dest_qp;
    uint32_t psn;
    CmKind cm;
    uint32_t cm_qpn;
    uint32_t cm_psn;
};

// Synthetic payloads are byte patterns, not upper-layer protocols: keep the protocols
// that Wireshark tries heuristically on InfiniBand payloads from claiming (and then
// failing on) them - RPC-over-RDMA throws "Malformed Packet" on a 1-byte SEND.
constexpr const char* kPayloadProtocols[] = {
    "smc",  "smb_direct",      "rpcordma", "nvme-rdma",     "lnet",
    "iser", "infiniband.eoib", "fcoib",    "infiniband_sdp"};

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    if (!s.empty() && s.back() == sep) out.emplace_back();
    return out;
}

uint32_t number(const std::string& s) {
    return static_cast<uint32_t>(std::stoul(s, nullptr, 0));
}

class TsharkDissects : public ::testing::TestWithParam<std::string> {};

TEST_P(TsharkDissects, every_roce_frame_as_generated) {
    const std::string name = GetParam();
    ScaleOptions opts;
    opts.scale = 0.25;
    opts.qps = 400;
    opts.packets = 4000;
    auto scenario = builtin_scenario(name, opts);
    ASSERT_TRUE(scenario);
    const std::string pcap =
        ::testing::TempDir() + "gen_tshark_" + std::to_string(::getpid()) + "_" + name + ".pcap";

    std::map<uint64_t, Expected> roce;  // frame number -> what was sent
    std::set<uint16_t> low_ports;
    uint64_t frame = 0, icrc_bad = 0, cm_frames = 0;
    Generation gen(*scenario, 3);
    std::string error;
    ASSERT_TRUE(gen.run(pcap, error, [&](const SimPacket& p, std::span<const uint8_t> bytes) {
        ++frame;
        if (p.cls != PacketClass::roce) return;
        proto::ParsedPacket parsed;
        if (proto::parse_frame(bytes, parsed) != proto::Verdict::roce ||
            !proto::verify_icrc(bytes, parsed))
            ++icrc_bad;
        uint32_t cm_qpn = 0, cm_psn = 0;
        if (p.cm != CmKind::none) {
            ++cm_frames;
            cm_qpn = p.cm_qpn;
            cm_psn = p.cm_psn;
        }
        roce[frame] = {p.t.bth.opcode, p.t.bth.dest_qp, p.t.bth.psn, p.cm, cm_qpn, cm_psn};
        if (p.sport < 1024) low_ports.insert(p.sport);
    })) << error;
    EXPECT_EQ(icrc_bad, 0u);
    ASSERT_FALSE(roce.empty());
    // The truth does not model the dataplane's cap of 8 early packets per endpoint.
    EXPECT_LE(gen.truth().max_held(), 8u);

    std::string cmd = "tshark -n -r '" + pcap + "' -d udp.port==4791,infiniband";
    for (uint16_t port : low_ports) cmd += " -d udp.port==" + std::to_string(port) + ",infiniband";
    for (const char* p : kPayloadProtocols) cmd += std::string(" --disable-protocol ") + p;
    cmd +=
        " -T fields -E separator='|' -E occurrence=a -E aggregator=';'"
        " -e frame.number -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn"
        " -e _ws.expert.message -e infiniband.mad.attributeid -e infiniband.cm.req.localqpn"
        " -e infiniband.cm.req.startpsn -e infiniband.cm.rep.localqpn -e infiniband.cm.rep.startpsn"
        " 2>/dev/null";
    std::FILE* pipe = ::popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char line[4096];
    uint64_t checked = 0, cm_checked = 0;
    while (std::fgets(line, sizeof(line), pipe)) {
        std::string s(line);
        if (!s.empty() && s.back() == '\n') s.pop_back();
        const auto f = split(s, '|');
        ASSERT_EQ(f.size(), 10u) << s;
        const auto it = roce.find(std::stoull(f[0]));
        if (it == roce.end()) continue;  // non-RoCE and deliberately malformed frames
        const Expected& e = it->second;
        ++checked;
        SCOPED_TRACE(name + " frame " + f[0]);
        ASSERT_FALSE(f[1].empty()) << "not dissected as InfiniBand";
        EXPECT_EQ(number(f[1]), e.opcode);
        EXPECT_EQ(number(f[2]), e.dest_qp);
        EXPECT_EQ(number(f[3]), e.psn);
        EXPECT_EQ(f[4], "") << "expert info";
        if (e.cm == CmKind::req) {
            EXPECT_EQ(f[5], "0x0010");
            EXPECT_EQ(number(f[6]), e.cm_qpn);
            EXPECT_EQ(number(f[7]), e.cm_psn);
            ++cm_checked;
        } else if (e.cm == CmKind::rep) {
            EXPECT_EQ(f[5], "0x0013");
            EXPECT_EQ(number(f[8]), e.cm_qpn);
            EXPECT_EQ(number(f[9]), e.cm_psn);
            ++cm_checked;
        } else if (e.cm == CmKind::rtu) {
            EXPECT_EQ(f[5], "0x0014");
            ++cm_checked;
        }
    }
    EXPECT_EQ(::pclose(pipe), 0) << cmd;
    EXPECT_EQ(checked, roce.size()) << "tshark did not list every RoCE frame";
    EXPECT_EQ(cm_checked, cm_frames);
    std::remove(pcap.c_str());
}

INSTANTIATE_TEST_SUITE_P(Builtins, TsharkDissects, ::testing::ValuesIn(builtin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace insert::gen
