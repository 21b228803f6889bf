#include "dataplane/offload/flow_rules.hpp"

#include <rte_byteorder.h>

#include <algorithm>
#include <bit>
#include <cstdio>

namespace insert::offload {

namespace {

constexpr uint32_t kQpnBits = 24;
constexpr uint32_t kQpnMask = (1u << kQpnBits) - 1;

void add_l2_l3(FlowRule& r, unsigned vlans, bool ipv6) {
    r.add_item(RTE_FLOW_ITEM_TYPE_ETH);  // any MAC, any (outer) EtherType
    for (unsigned v = 0; v < vlans; ++v) r.add_item(RTE_FLOW_ITEM_TYPE_VLAN);
    r.add_item(ipv6 ? RTE_FLOW_ITEM_TYPE_IPV6 : RTE_FLOW_ITEM_TYPE_IPV4);
}

void add_udp_roce(FlowRule& r) {
    rte_flow_item_udp spec{};
    rte_flow_item_udp mask{};
    spec.hdr.dst_port = rte_cpu_to_be_16(kRoceV2UdpPort);
    mask.hdr.dst_port = rte_cpu_to_be_16(0xFFFF);
    r.add_item(RTE_FLOW_ITEM_TYPE_UDP, &spec, &mask);
}

std::string item_name(const rte_flow_item& it) {
    switch (it.type) {
        case RTE_FLOW_ITEM_TYPE_ETH:
            return "ETH";
        case RTE_FLOW_ITEM_TYPE_VLAN:
            return "VLAN";
        case RTE_FLOW_ITEM_TYPE_IPV4:
            return "IPV4";
        case RTE_FLOW_ITEM_TYPE_IPV6:
            return "IPV6";
        case RTE_FLOW_ITEM_TYPE_UDP: {
            std::string s = "UDP";
            if (it.spec && it.mask) {
                const auto* sp = static_cast<const rte_flow_item_udp*>(it.spec);
                const auto* mk = static_cast<const rte_flow_item_udp*>(it.mask);
                if (mk->hdr.dst_port)
                    s += " dst=" + std::to_string(rte_be_to_cpu_16(sp->hdr.dst_port));
            }
            return s;
        }
#if INSERT_HAVE_IB_BTH
        case RTE_FLOW_ITEM_TYPE_IB_BTH:
            return "IB_BTH";
#endif
        case RTE_FLOW_ITEM_TYPE_VOID:
            return "VOID";
        default:
            return "ITEM" + std::to_string(static_cast<int>(it.type));
    }
}

std::string queue_list(const uint16_t* q, uint32_t n) {
    if (n == 0) return "none";
    bool contiguous = true;
    for (uint32_t i = 1; i < n; ++i) contiguous = contiguous && q[i] == q[i - 1] + 1;
    if (contiguous && n > 1) return std::to_string(q[0]) + "-" + std::to_string(q[n - 1]);
    std::string s;
    for (uint32_t i = 0; i < n; ++i) s.append(i ? "," : "").append(std::to_string(q[i]));
    return s;
}

}  // namespace

FlowRule make_roce_rss_rule(const NicCaps& caps, unsigned vlans, bool ipv6, RssFlavor flavor) {
    FlowRule r;
    r.name = std::string("roce-") + (ipv6 ? "ipv6" : "ipv4") + "-vlan" + std::to_string(vlans) +
             (flavor == RssFlavor::symmetric_function ? "-symfunc" : "-symkey");
    r.attr.ingress = 1;
    r.attr.priority = 0;
    add_l2_l3(r, vlans, ipv6);
    add_udp_roce(r);

    std::vector<uint16_t> queues(caps.worker_queues);
    for (uint16_t q = 0; q < caps.worker_queues; ++q) queues[q] = q;
    rte_flow_action_rss rss{};
    rss.level = 0;  // outermost headers
    rss.types = kIpOnlyRssTypes & (caps.rss_types ? caps.rss_types : kIpOnlyRssTypes);
    rss.queue_num = caps.worker_queues;
    rss.queue = r.keep_array(queues);
    if (flavor == RssFlavor::symmetric_function) {
        rss.func = RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ;
        rss.key_len = 0;  // the device's key: the function is symmetric by itself
        rss.key = nullptr;
    } else {
        rss.func = RTE_ETH_HASH_FUNCTION_TOEPLITZ;
        std::vector<uint8_t> key(caps.hash_key_size ? caps.hash_key_size : kDefaultRssKeyLen);
        for (std::size_t i = 0; i < key.size(); ++i)
            key[i] = (i % 2 == 0) ? kSymmetricKeyByte0 : kSymmetricKeyByte1;
        rss.key_len = static_cast<uint32_t>(key.size());
        rss.key = r.keep_array(key);
    }
    r.add_action(RTE_FLOW_ACTION_TYPE_RSS, rss);
    r.finish();
    return r;
}

FlowRule make_passthrough_rule(uint16_t queue, bool hairpin) {
    FlowRule r;
    r.name = hairpin ? "hairpin" : "passthrough";
    r.attr.ingress = 1;
    r.attr.priority = 1;  // below the RoCE rules: only what they leave
    r.add_item(RTE_FLOW_ITEM_TYPE_ETH);
    rte_flow_action_queue q{};
    q.index = queue;
    r.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, q);
    r.finish();
    return r;
}

std::vector<std::pair<uint32_t, uint32_t>> split_qpn_range(uint32_t first, uint32_t count) {
    std::vector<std::pair<uint32_t, uint32_t>> blocks;
    uint64_t lo = first & kQpnMask;
    uint64_t end = std::min<uint64_t>(lo + count, uint64_t{1} << kQpnBits);
    while (lo < end) {
        // Largest aligned power-of-two block starting at lo that fits before end.
        uint64_t size = lo == 0 ? (uint64_t{1} << kQpnBits) : (lo & (~lo + 1));
        while (lo + size > end) size >>= 1;
        const uint32_t mask = kQpnMask & ~static_cast<uint32_t>(size - 1);
        blocks.emplace_back(static_cast<uint32_t>(lo), mask);
        lo += size;
    }
    return blocks;
}

RulePlan build_insert_rules(const NicCaps& caps, const std::vector<QpnRange>& qpn_ranges) {
    RulePlan plan;
    if (caps.worker_queues == 0) {
        plan.skipped.push_back("no worker queues");
        return plan;
    }
    if (caps.rss_types != 0 && (caps.rss_types & kIpOnlyRssTypes) == 0) {
        plan.skipped.push_back(
            "the port cannot hash on IP addresses alone (flow_type_rss_offloads 0x" +
            [&] {
                char b[32];
                std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(caps.rss_types));
                return std::string(b);
            }() +
            "), so RSS could split a connection");
        return plan;
    }
    for (unsigned vlans = 0; vlans <= 2; ++vlans)
        for (bool ipv6 : {false, true}) {
            RuleChoice c;
            c.alternatives.push_back(
                make_roce_rss_rule(caps, vlans, ipv6, RssFlavor::symmetric_function));
            c.alternatives.push_back(
                make_roce_rss_rule(caps, vlans, ipv6, RssFlavor::symmetric_key));
            plan.rules.push_back(std::move(c));
        }
    if (!qpn_ranges.empty()) {
#if INSERT_HAVE_IB_BTH
        if (!caps.bth_match) {
            plan.skipped.push_back("QPN steering: " + caps.driver + " cannot match IB_BTH");
        } else {
            for (const QpnRange& range : qpn_ranges) {
                for (const auto& [value, mask] : split_qpn_range(range.first, range.count)) {
                    for (bool ipv6 : {false, true}) {
                        FlowRule r;
                        char nm[64];
                        std::snprintf(nm, sizeof nm, "qpn-%s-0x%06x/%d", ipv6 ? "ipv6" : "ipv4",
                                      value, std::popcount(mask));
                        r.name = nm;
                        r.attr.ingress = 1;
                        r.attr.priority = 0;  // more specific than the RSS rules? same
                                              // level: put them in front (listed first)
                        add_l2_l3(r, 0, ipv6);
                        add_udp_roce(r);
                        rte_flow_item_ib_bth spec{};
                        rte_flow_item_ib_bth mk{};
                        for (int b = 0; b < 3; ++b) {
                            spec.hdr.dst_qp[b] = static_cast<uint8_t>(value >> (16 - 8 * b));
                            mk.hdr.dst_qp[b] = static_cast<uint8_t>(mask >> (16 - 8 * b));
                        }
                        r.add_item(RTE_FLOW_ITEM_TYPE_IB_BTH, &spec, &mk);
                        rte_flow_action_queue q{};
                        q.index = range.queue;
                        r.add_action(RTE_FLOW_ACTION_TYPE_QUEUE, q);
                        r.finish();
                        RuleChoice c;
                        c.alternatives.push_back(std::move(r));
                        plan.rules.insert(plan.rules.begin(), std::move(c));
                    }
                }
            }
        }
#else
        plan.skipped.push_back(
            "QPN steering needs RTE_FLOW_ITEM_TYPE_IB_BTH (DPDK >= 23.07; "
            "this build has DPDK " +
            std::to_string(RTE_VER_YEAR) + "." + std::to_string(RTE_VER_MONTH) + ")");
#endif
    }
    RuleChoice pass;
    if (caps.hairpin)
        pass.alternatives.push_back(make_passthrough_rule(passthrough_queue(caps) + 1, true));
    pass.alternatives.push_back(make_passthrough_rule(passthrough_queue(caps), false));
    plan.rules.push_back(std::move(pass));
    return plan;
}

std::string describe(const FlowRule& rule) {
    std::string s;
    for (const rte_flow_item& it : rule.pattern) {
        if (it.type == RTE_FLOW_ITEM_TYPE_END) break;
        if (!s.empty()) s += " / ";
        s += item_name(it);
    }
    s += " ->";
    for (const rte_flow_action& a : rule.actions) {
        switch (a.type) {
            case RTE_FLOW_ACTION_TYPE_END:
                break;
            case RTE_FLOW_ACTION_TYPE_QUEUE:
                s += " QUEUE " +
                     std::to_string(static_cast<const rte_flow_action_queue*>(a.conf)->index);
                break;
            case RTE_FLOW_ACTION_TYPE_RSS: {
                const auto* r = static_cast<const rte_flow_action_rss*>(a.conf);
                s += std::string(" RSS(") +
                     (r->func == RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ ? "SYMMETRIC_TOEPLITZ"
                                                                          : "TOEPLITZ+symkey") +
                     ", IP, queues " + queue_list(r->queue, r->queue_num) + ")";
                break;
            }
            case RTE_FLOW_ACTION_TYPE_DROP:
                s += " DROP";
                break;
            default:
                s += " ACTION" + std::to_string(static_cast<int>(a.type));
                break;
        }
    }
    return s;
}

}  // namespace insert::offload
