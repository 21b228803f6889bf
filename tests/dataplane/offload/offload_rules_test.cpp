// Rule construction per NIC capability (DESIGN.md "Offload"), without EAL or a device.
#include <gtest/gtest.h>

#include <set>

#include "dataplane/offload/flow_rules.hpp"

namespace insert::offload {
namespace {

NicCaps caps_with(uint16_t queues, uint64_t rss_types = kIpOnlyRssTypes, bool hairpin = false) {
    NicCaps c;
    c.driver = "test";
    c.worker_queues = queues;
    c.rss_types = rss_types;
    c.hash_key_size = 52;
    c.hairpin = hairpin;
    return c;
}

std::vector<rte_flow_item_type> types(const FlowRule& r) {
    std::vector<rte_flow_item_type> t;
    for (const auto& it : r.pattern) t.push_back(it.type);
    return t;
}

const rte_flow_action_rss& rss_of(const FlowRule& r) {
    EXPECT_EQ(r.actions.at(0).type, RTE_FLOW_ACTION_TYPE_RSS);
    return *static_cast<const rte_flow_action_rss*>(r.actions.at(0).conf);
}

TEST(OffloadRules, plan_covers_untagged_and_tagged_ipv4_and_ipv6_then_passthrough) {
    const RulePlan plan = build_insert_rules(caps_with(4));
    ASSERT_EQ(plan.rules.size(), 7u);  // 3 tag depths x 2 IP versions + passthrough
    std::set<std::vector<rte_flow_item_type>> patterns;
    for (std::size_t i = 0; i < 6; ++i) patterns.insert(types(plan.rules[i].alternatives.front()));
    EXPECT_EQ(patterns.size(), 6u);
    EXPECT_TRUE(patterns.count({RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_IPV4,
                                RTE_FLOW_ITEM_TYPE_UDP, RTE_FLOW_ITEM_TYPE_END}));
    EXPECT_TRUE(
        patterns.count({RTE_FLOW_ITEM_TYPE_ETH, RTE_FLOW_ITEM_TYPE_VLAN, RTE_FLOW_ITEM_TYPE_VLAN,
                        RTE_FLOW_ITEM_TYPE_IPV6, RTE_FLOW_ITEM_TYPE_UDP, RTE_FLOW_ITEM_TYPE_END}));
    const FlowRule& pass = plan.rules.back().alternatives.front();
    EXPECT_EQ(pass.name, "passthrough");
    EXPECT_GT(pass.attr.priority, plan.rules.front().alternatives.front().attr.priority);
    ASSERT_EQ(pass.actions.at(0).type, RTE_FLOW_ACTION_TYPE_QUEUE);
    EXPECT_EQ(static_cast<const rte_flow_action_queue*>(pass.actions[0].conf)->index, 4u);
}

TEST(OffloadRules, roce_rule_matches_udp_destination_4791_only) {
    const FlowRule r = make_roce_rss_rule(caps_with(2), 0, false, RssFlavor::symmetric_function);
    const rte_flow_item& udp = r.pattern.at(2);
    ASSERT_EQ(udp.type, RTE_FLOW_ITEM_TYPE_UDP);
    const auto* spec = static_cast<const rte_flow_item_udp*>(udp.spec);
    const auto* mask = static_cast<const rte_flow_item_udp*>(udp.mask);
    EXPECT_EQ(rte_be_to_cpu_16(spec->hdr.dst_port), 4791);
    EXPECT_EQ(mask->hdr.dst_port, 0xFFFF);
    EXPECT_EQ(mask->hdr.src_port, 0);  // the source port is entropy (SPEC 1)
}

TEST(OffloadRules, rss_alternatives_are_symmetric_function_then_symmetric_key) {
    const RulePlan plan = build_insert_rules(caps_with(3));
    const RuleChoice& c = plan.rules.front();
    ASSERT_EQ(c.alternatives.size(), 2u);
    const auto& a = rss_of(c.alternatives[0]);
    EXPECT_EQ(a.func, RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ);
    EXPECT_EQ(a.key_len, 0u);
    const auto& b = rss_of(c.alternatives[1]);
    EXPECT_EQ(b.func, RTE_ETH_HASH_FUNCTION_TOEPLITZ);
    ASSERT_EQ(b.key_len, 52u);  // the device's key size
    for (uint32_t i = 0; i < b.key_len; ++i)
        EXPECT_EQ(b.key[i], i % 2 ? kSymmetricKeyByte1 : kSymmetricKeyByte0);
    for (const auto* r : {&a, &b}) {
        ASSERT_EQ(r->queue_num, 3u);
        for (uint16_t q = 0; q < 3; ++q) EXPECT_EQ(r->queue[q], q);
        EXPECT_EQ(r->types & ~kIpOnlyRssTypes, 0u) << "L4 ports would split a connection";
    }
}

TEST(OffloadRules, rss_types_are_limited_to_what_the_port_hashes) {
    const RulePlan plan =
        build_insert_rules(caps_with(2, RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_UDP));
    EXPECT_EQ(rss_of(plan.rules.front().alternatives[0]).types, RTE_ETH_RSS_IPV4);
}

TEST(OffloadRules, port_without_ip_only_hash_gets_no_plan_and_a_reason) {
    const RulePlan plan = build_insert_rules(caps_with(2, RTE_ETH_RSS_NONFRAG_IPV4_UDP));
    EXPECT_TRUE(plan.rules.empty());
    ASSERT_EQ(plan.skipped.size(), 1u);
    EXPECT_NE(plan.skipped[0].find("IP addresses alone"), std::string::npos);
}

TEST(OffloadRules, hairpin_port_prefers_the_hairpin_queue_for_passthrough) {
    const RulePlan plan = build_insert_rules(caps_with(2, kIpOnlyRssTypes, true));
    const RuleChoice& pass = plan.rules.back();
    ASSERT_EQ(pass.alternatives.size(), 2u);
    EXPECT_EQ(pass.alternatives[0].name, "hairpin");
    EXPECT_EQ(
        static_cast<const rte_flow_action_queue*>(pass.alternatives[0].actions[0].conf)->index, 3u);
    EXPECT_EQ(pass.alternatives[1].name, "passthrough");
}

TEST(OffloadRules, qpn_steering_is_guarded_by_the_dpdk_version) {
    NicCaps caps = caps_with(2);
    caps.bth_match = true;
    const RulePlan plan = build_insert_rules(caps, {{0x100, 0x100, 1}});
#if INSERT_HAVE_IB_BTH
    EXPECT_EQ(plan.rules.size(), 7u + 2u);  // one prefix block, IPv4 and IPv6
#else
    EXPECT_EQ(plan.rules.size(), 7u);
    ASSERT_EQ(plan.skipped.size(), 1u);
    EXPECT_NE(plan.skipped[0].find("23.07"), std::string::npos);
#endif
}

TEST(OffloadRules, qpn_ranges_split_into_aligned_prefix_blocks) {
    auto blocks = split_qpn_range(0x100, 0x100);
    ASSERT_EQ(blocks.size(), 1u);
    EXPECT_EQ(blocks[0].first, 0x100u);
    EXPECT_EQ(blocks[0].second, 0xFFFF00u);
    blocks = split_qpn_range(3, 6);  // 3, 4-7, 8
    ASSERT_EQ(blocks.size(), 3u);
    EXPECT_EQ(blocks[0], std::make_pair(3u, 0xFFFFFFu));
    EXPECT_EQ(blocks[1], std::make_pair(4u, 0xFFFFFCu));
    EXPECT_EQ(blocks[2], std::make_pair(8u, 0xFFFFFFu));
    // Every QPN of the range is covered exactly once, nothing outside it.
    for (uint32_t q = 0; q < 16; ++q) {
        unsigned hits = 0;
        for (auto [v, m] : blocks) hits += (q & m) == v;
        EXPECT_EQ(hits, (q >= 3 && q < 9) ? 1u : 0u) << q;
    }
}

TEST(OffloadRules, describe_names_pattern_and_fate) {
    const FlowRule r = make_roce_rss_rule(caps_with(4), 1, true, RssFlavor::symmetric_function);
    EXPECT_EQ(describe(r),
              "ETH / VLAN / IPV6 / UDP dst=4791 -> RSS(SYMMETRIC_TOEPLITZ, IP, queues 0-3)");
    EXPECT_EQ(describe(make_passthrough_rule(4, false)), "ETH -> QUEUE 4");
}

}  // namespace
}  // namespace insert::offload
