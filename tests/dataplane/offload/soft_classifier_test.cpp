// The emulated offload, frame by frame against the rules it was given (no EAL).
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <vector>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/offload/flow_rules.hpp"
#include "dataplane/offload/soft_classifier.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::offload {
namespace {

using Frame = std::vector<uint8_t>;
constexpr uint16_t kWorkers = 4;

Frame roce(uint32_t src, uint32_t dst, unsigned vlans = 0, bool ipv6 = false, uint16_t tci = 7,
           uint16_t outer_tpid = 0x8100) {
    proto::FrameSpec f;
    if (ipv6) {
        uint8_t a[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        uint8_t b[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        std::memcpy(a + 12, &src, 4);
        std::memcpy(b + 12, &dst, 4);
        f.src_ip = proto::IpAddress::v6_bytes(a);
        f.dst_ip = proto::IpAddress::v6_bytes(b);
    } else {
        f.src_ip = proto::IpAddress::v4(src);
        f.dst_ip = proto::IpAddress::v4(dst);
    }
    f.vlan_count = static_cast<uint8_t>(vlans);
    f.vlan_tpid[0] = outer_tpid;
    f.vlan_tci[0] = tci;
    f.vlan_tci[1] = static_cast<uint16_t>(tci + 1);
    f.src_port = 49152;
    f.t.bth.opcode = proto::op::kSendOnly;
    f.t.bth.dest_qp = 0x101;
    f.payload_len = 64;
    Frame out(proto::frame_length(f));
    EXPECT_EQ(proto::build_frame(f, out), out.size());
    return out;
}

std::size_t l3(const Frame& f) {
    std::size_t off = 12;
    while (f[off] == 0x81 || f[off] == 0x88) off += 4;
    return off + 2;
}

Frame with_udp_dst(Frame f, uint16_t port) {
    const std::size_t ip = l3(f);
    const std::size_t udp = ip + ((f[ip] >> 4) == 4 ? (f[ip] & 0xF) * 4u : 40u);
    f[udp + 2] = static_cast<uint8_t>(port >> 8);
    f[udp + 3] = static_cast<uint8_t>(port);
    return f;
}

SoftClassifier default_plan(uint16_t workers = kWorkers,
                            RssFlavor flavor = RssFlavor::symmetric_function) {
    NicCaps caps;
    caps.worker_queues = workers;
    caps.rss_types = kIpOnlyRssTypes;
    const RulePlan plan = build_insert_rules(caps);
    SoftClassifier c;
    std::string why;
    for (const RuleChoice& r : plan.rules) {
        const FlowRule& rule = flavor == RssFlavor::symmetric_key && r.alternatives.size() > 1
                                   ? r.alternatives[1]
                                   : r.alternatives[0];
        EXPECT_TRUE(c.add(rule, why)) << why;
    }
    return c;
}

bool to_worker(const Decision& d) {
    return d.kind == Decision::Kind::queue && d.queue < kWorkers;
}
bool to_passthrough(const Decision& d) {
    return d.kind == Decision::Kind::queue && d.queue == kWorkers;
}

TEST(SoftClassifier, toeplitz_matches_the_microsoft_verification_vector) {
    // RSS verification suite: IPv4 66.9.149.187 -> 161.142.100.80, IP-only hash 0x323e8fc2.
    const uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                             0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                             0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                             0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
    const uint8_t input[8] = {66, 9, 149, 187, 161, 142, 100, 80};
    EXPECT_EQ(toeplitz(input, key), 0x323e8fc2u);
}

TEST(SoftClassifier, roce_in_every_encapsulation_goes_to_a_worker) {
    const SoftClassifier c = default_plan();
    for (unsigned vlans = 0; vlans <= 2; ++vlans)
        for (bool v6 : {false, true})
            for (uint16_t tpid : {uint16_t{0x8100}, uint16_t{0x88A8}}) {
                const Frame f = roce(0x0A000001, 0x0A000002, vlans, v6, 7, tpid);
                const Decision d = c.classify(f);
                EXPECT_TRUE(to_worker(d)) << vlans << " tags, ipv6 " << v6;
                // The rule that matched is the one for this encapsulation.
                EXPECT_NE(
                    c.name(static_cast<std::size_t>(d.rule))
                        .find(std::string(v6 ? "ipv6" : "ipv4") + "-vlan" + std::to_string(vlans)),
                    std::string::npos);
            }
}

TEST(SoftClassifier, everything_else_goes_to_passthrough) {
    const SoftClassifier c = default_plan();
    const Frame base = roce(0x0A000001, 0x0A000002);
    EXPECT_TRUE(to_passthrough(c.classify(with_udp_dst(base, 53))));
    Frame sport_only = with_udp_dst(base, 1234);  // 4791 as the *source* port is not RoCE
    const std::size_t udp = l3(sport_only) + 20;
    sport_only[udp] = 4791 >> 8;
    sport_only[udp + 1] = 4791 & 0xFF;
    EXPECT_TRUE(to_passthrough(c.classify(sport_only)));
    Frame tcp = base;
    tcp[l3(tcp) + 9] = 6;
    EXPECT_TRUE(to_passthrough(c.classify(tcp)));
    Frame arp = base;
    arp[12] = 0x08;
    arp[13] = 0x06;
    EXPECT_TRUE(to_passthrough(c.classify(arp)));
    Frame fragment = base;  // first fragment (MF): not RoCE by SPEC 1
    fragment[l3(fragment) + 6] = 0x20;
    EXPECT_TRUE(to_passthrough(c.classify(fragment)));
    const Frame runt(10, 0);
    EXPECT_EQ(c.classify(runt).kind, Decision::Kind::unmatched);  // NIC default: queue 0
}

TEST(SoftClassifier, both_directions_of_a_connection_reach_the_same_worker) {
    for (RssFlavor flavor : {RssFlavor::symmetric_function, RssFlavor::symmetric_key}) {
        const SoftClassifier c = default_plan(kWorkers, flavor);
        std::mt19937 rng(7);
        std::set<uint16_t> used;
        for (int i = 0; i < 500; ++i) {
            const uint32_t a = rng(), b = rng();
            for (bool v6 : {false, true}) {
                const Decision ab = c.classify(roce(a, b, 0, v6));
                const Decision ba = c.classify(roce(b, a, 0, v6));
                ASSERT_TRUE(to_worker(ab));
                EXPECT_EQ(ab.queue, ba.queue);
                used.insert(ab.queue);
            }
        }
        EXPECT_EQ(used.size(), kWorkers) << "RSS spreads connections over every worker queue";
    }
}

TEST(SoftClassifier, applies_the_rules_it_was_given_not_a_fixed_policy) {
    NicCaps caps;
    caps.worker_queues = 2;
    SoftClassifier c;
    std::string why;
    // Only untagged IPv4 RoCE to queue 1, DNS dropped, the rest to queue 5.
    FlowRule v4 = make_roce_rss_rule(caps, 0, false, RssFlavor::symmetric_function);
    FlowRule only_q1;
    only_q1.name = "ipv4-roce-q1";
    only_q1.attr.ingress = 1;
    only_q1.pattern = v4.pattern;
    only_q1.actions.clear();
    only_q1.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, rte_flow_action_queue{1});
    only_q1.add_action(RTE_FLOW_ACTION_TYPE_END);
    // (the pattern's spec/mask storage lives in v4, which outlives the classifier inputs)
    FlowRule dns;
    dns.name = "drop-dns";
    dns.attr.ingress = 1;
    dns.add_item(RTE_FLOW_ITEM_TYPE_ETH);
    dns.add_item(RTE_FLOW_ITEM_TYPE_IPV4);
    rte_flow_item_udp spec{}, mask{};
    spec.hdr.dst_port = rte_cpu_to_be_16(53);
    mask.hdr.dst_port = 0xFFFF;
    dns.add_item(RTE_FLOW_ITEM_TYPE_UDP, &spec, &mask);
    dns.add_action(RTE_FLOW_ACTION_TYPE_DROP);
    dns.finish();
    ASSERT_TRUE(c.add(make_passthrough_rule(5, false), why))
        << why;  // priority 1: added first, still last
    ASSERT_TRUE(c.add(only_q1, why)) << why;
    ASSERT_TRUE(c.add(dns, why)) << why;

    const Decision a = c.classify(roce(1, 2));
    EXPECT_EQ(a.kind, Decision::Kind::queue);
    EXPECT_EQ(a.queue, 1);
    EXPECT_EQ(c.classify(roce(1, 2, 0, true)).queue, 5);  // IPv6: no rule but passthrough
    EXPECT_EQ(c.classify(roce(1, 2, 1)).queue, 5);        // tagged: ETH / IPV4 does not match
    EXPECT_EQ(c.classify(with_udp_dst(roce(1, 2), 53)).kind, Decision::Kind::drop);
}

TEST(SoftClassifier, byte_compares_on_non_ip_frames_are_applied_before_the_shape_decides) {
    // Class 0 (untagged, not IP) is decided without a compare only when no rule of that
    // shape compares bytes: here one does (ARP dropped), so every such frame is compared.
    SoftClassifier c;
    std::string why;
    FlowRule arp;
    arp.name = "drop-arp";
    arp.attr.ingress = 1;
    rte_flow_item_eth spec{}, mask{};
    spec.hdr.ether_type = rte_cpu_to_be_16(0x0806);
    mask.hdr.ether_type = 0xFFFF;
    arp.add_item(RTE_FLOW_ITEM_TYPE_ETH, &spec, &mask);
    arp.add_action(RTE_FLOW_ACTION_TYPE_DROP);
    arp.finish();
    ASSERT_TRUE(c.add(arp, why)) << why;
    ASSERT_TRUE(c.add(make_passthrough_rule(kWorkers, false), why)) << why;
    Frame f = roce(1, 2);
    f[12] = 0x08;
    f[13] = 0x06;
    EXPECT_EQ(c.classify(f).kind, Decision::Kind::drop);
    EXPECT_EQ(c.classify(f).rule, 0);
    f[13] = 0xCC;  // LLDP: 0x88CC
    f[12] = 0x88;
    EXPECT_TRUE(to_passthrough(c.classify(f)));
    EXPECT_EQ(c.classify(f).rule, 1);
    EXPECT_EQ(c.classify(Frame(64, 0)).rule, 1);                          // EtherType 0
    EXPECT_EQ(c.classify(Frame(10, 0)).kind, Decision::Kind::unmatched);  // not Ethernet
}

TEST(SoftClassifier, a_rule_the_shape_decides_shadows_every_later_rule) {
    // ETH alone at priority 0: added before the plan's RoCE rules (also priority 0) it
    // takes every Ethernet frame, RoCE included; added after them, only what they leave
    // (it still comes before the priority-1 passthrough rule).
    FlowRule all;
    all.name = "all-to-2";
    all.attr.ingress = 1;
    all.attr.priority = 0;
    all.add_item(RTE_FLOW_ITEM_TYPE_ETH);
    all.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, rte_flow_action_queue{2});
    all.finish();
    NicCaps caps;
    caps.worker_queues = kWorkers;
    caps.rss_types = kIpOnlyRssTypes;
    const RulePlan plan = build_insert_rules(caps);
    std::string why;
    SoftClassifier first;
    ASSERT_TRUE(first.add(all, why)) << why;
    for (const RuleChoice& r : plan.rules) ASSERT_TRUE(first.add(r.alternatives[0], why)) << why;
    SoftClassifier after = default_plan();
    ASSERT_TRUE(after.add(all, why)) << why;

    const Frame dns = with_udp_dst(roce(1, 2), 53);
    for (const Frame& f : {roce(1, 2), roce(3, 4, 2, true), dns, Frame(64, 0)}) {
        const Decision d = first.classify(f);
        EXPECT_EQ(d.queue, 2);
        EXPECT_EQ(first.name(static_cast<std::size_t>(d.rule)), "all-to-2");
    }
    EXPECT_TRUE(to_worker(after.classify(roce(1, 2))));
    EXPECT_TRUE(to_worker(after.classify(roce(3, 4, 2, true))));
    for (const Frame& f : {dns, Frame(64, 0)}) {
        const Decision d = after.classify(f);
        EXPECT_EQ(d.queue, 2);
        EXPECT_EQ(after.name(static_cast<std::size_t>(d.rule)), "all-to-2");
    }
    EXPECT_EQ(first.classify(Frame(13, 0)).kind, Decision::Kind::unmatched);  // not Ethernet
}

TEST(SoftClassifier, vlan_tci_and_has_vlan_masks_are_applied) {
    SoftClassifier c;
    std::string why;
    FlowRule r;
    r.name = "vlan100";
    r.attr.ingress = 1;
    rte_flow_item_eth eth_spec{}, eth_mask{};
    eth_spec.has_vlan = 1;
    eth_mask.has_vlan = 1;
    r.add_item(RTE_FLOW_ITEM_TYPE_ETH, &eth_spec, &eth_mask);
    rte_flow_item_vlan vs{}, vm{};
    vs.hdr.vlan_tci = rte_cpu_to_be_16(100);
    vm.hdr.vlan_tci = rte_cpu_to_be_16(0x0FFF);
    r.add_item(RTE_FLOW_ITEM_TYPE_VLAN, &vs, &vm);
    r.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, rte_flow_action_queue{3});
    r.finish();
    ASSERT_TRUE(c.add(r, why)) << why;
    EXPECT_EQ(c.classify(roce(1, 2, 1, false, 100)).queue, 3);
    EXPECT_EQ(c.classify(roce(1, 2, 1, false, 0x2000 | 100)).queue, 3);  // PCP outside the mask
    EXPECT_EQ(c.classify(roce(1, 2, 1, false, 101)).kind, Decision::Kind::unmatched);
    EXPECT_EQ(c.classify(roce(1, 2, 0)).kind, Decision::Kind::unmatched);
}

TEST(SoftClassifier, refuses_what_it_cannot_emulate) {
    SoftClassifier c;
    std::string why;
    FlowRule tcp;
    tcp.name = "tcp";
    tcp.attr.ingress = 1;
    tcp.add_item(RTE_FLOW_ITEM_TYPE_ETH);
    tcp.add_item(RTE_FLOW_ITEM_TYPE_IPV4);
    tcp.add_item(RTE_FLOW_ITEM_TYPE_TCP);
    tcp.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, rte_flow_action_queue{0});
    tcp.finish();
    EXPECT_FALSE(c.add(tcp, why));
    EXPECT_NE(why.find("not emulated"), std::string::npos);
    FlowRule mark;
    mark.name = "mark-only";
    mark.attr.ingress = 1;
    mark.add_item(RTE_FLOW_ITEM_TYPE_ETH);
    mark.add_action(RTE_FLOW_ACTION_TYPE_MARK, rte_flow_action_mark{1});
    mark.finish();
    EXPECT_FALSE(c.add(mark, why));
    EXPECT_EQ(c.size(), 0u);
}

TEST(SoftClassifier, agrees_with_the_parser_on_every_bundled_capture) {
    const char* root = std::getenv("INSERT_SOURCE_ROOT");
    const std::filesystem::path dir = std::filesystem::path(root ? root : ".") / "pcaps";
    ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
    const SoftClassifier c = default_plan();
    std::size_t frames = 0, roce_frames = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string ext = entry.path().extension().string();
        if (ext != ".pcap" && ext != ".pcapng") continue;
        capture::CaptureFile file;
        ASSERT_TRUE(file.open(entry.path().string())) << file.error();
        capture::Frame f;
        while (file.next(f)) {
            proto::ParsedPacket p;
            const bool udp4791 = proto::parse_frame(f.data, p) != proto::Verdict::non_roce;
            const Decision d = c.classify(f.data);
            // RoCE and malformed RoCE (UDP 4791 by SPEC 1) reach a worker; nothing else does.
            EXPECT_EQ(to_worker(d), udp4791) << entry.path().filename() << " frame " << f.index;
            ++frames;
            roce_frames += udp4791;
        }
    }
    EXPECT_GT(frames, 100u);
    EXPECT_GT(roce_frames, 50u);
}

}  // namespace
}  // namespace insert::offload
