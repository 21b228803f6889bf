// rte_flow rule lists for INSERT's ports (DESIGN.md "Offload (rte_flow)"), built without
// touching a device so the lists are unit-tested without EAL:
//   1. RoCEv2 (UDP destination 4791, untagged / one / two VLAN tags, IPv4 / IPv6)
//      -> RSS over the worker queues with a symmetric hash of the IP pair, so both
//      directions of a connection reach one worker (connection affinity);
//   2. everything else -> the passthrough queue, or a hairpin queue when the NIC has one;
//   3. QPN ranges -> queues, where the NIC can match the BTH (RTE_FLOW_ITEM_TYPE_IB_BTH,
//      DPDK >= 23.07; compiled out on Debian's 22.11).
// The same lists drive the hardware (flow_installer.hpp) and the software classifier
// (soft_classifier.hpp) that stands in for a port that refuses them.
#pragma once

#include <rte_ethdev.h>  // RTE_ETH_RSS_* (header only: no EAL needed)
#include <rte_flow.h>
#include <rte_version.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace insert::offload {

constexpr uint16_t kRoceV2UdpPort = 4791;
// Toeplitz key whose 16-bit period makes the hash of (a, b) equal that of (b, a) for
// addresses and ports alike: symmetric RSS on NICs without a symmetric hash function.
constexpr uint8_t kSymmetricKeyByte0 = 0x6d;
constexpr uint8_t kSymmetricKeyByte1 = 0x5a;
constexpr std::size_t kDefaultRssKeyLen = 40;  // most NICs; dev_info.hash_key_size wins
constexpr uint16_t kDefaultRetaSize = 128;     // RETA entries the emulation assumes

#if RTE_VERSION >= RTE_VERSION_NUM(23, 7, 0, 0)
#define INSERT_HAVE_IB_BTH 1
#else
#define INSERT_HAVE_IB_BTH 0
#endif

// What a port offers, read once from rte_eth_dev_info (or made up by a unit test).
struct NicCaps {
    std::string driver;          // "net_mlx5", "net_af_packet", ...
    uint16_t worker_queues = 1;  // Rx queues 0..n-1 belong to the workers
    uint64_t rss_types = 0;      // dev_info.flow_type_rss_offloads
    uint8_t hash_key_size = kDefaultRssKeyLen;
    uint16_t reta_size = kDefaultRetaSize;
    bool hairpin = false;    // rte_eth_dev_hairpin_capability_get() succeeded
    bool bth_match = false;  // the PMD can match IB_BTH (mlx5 on DPDK >= 23.07)
};

// A contiguous QPN range steered to one worker queue.
struct QpnRange {
    uint32_t first = 0;
    uint32_t count = 0;
    uint16_t queue = 0;
};

// Which hash an RSS action asks for; the installer tries them in order.
enum class RssFlavor : uint8_t {
    symmetric_function,  // RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ, device key
    symmetric_key,       // RTE_ETH_HASH_FUNCTION_TOEPLITZ with the 0x6d5a key
};

// One rte_flow rule: attributes, pattern and actions with the storage their spec/mask/conf
// pointers refer to (shared, so a copy stays valid).
class FlowRule {
  public:
    std::string name;  // "roce-ipv4-vlan1", "passthrough", "qpn-0x100/24"
    rte_flow_attr attr{};
    std::vector<rte_flow_item> pattern;    // END-terminated
    std::vector<rte_flow_action> actions;  // END-terminated

    // Appends an item whose spec and mask are copies of the given structs.
    template <typename T>
    void add_item(rte_flow_item_type type, const T* spec, const T* mask) {
        rte_flow_item it{};
        it.type = type;
        if (spec) it.spec = keep(*spec);
        if (mask) it.mask = keep(*mask);
        pattern.push_back(it);
    }
    void add_item(rte_flow_item_type type) {
        pattern.push_back(rte_flow_item{type, nullptr, nullptr, nullptr});
    }
    template <typename T>
    void add_action(rte_flow_action_type type, const T& conf) {
        actions.push_back(rte_flow_action{type, keep(conf)});
    }
    void add_action(rte_flow_action_type type) {
        actions.push_back(rte_flow_action{type, nullptr});
    }
    void finish() {
        add_item(RTE_FLOW_ITEM_TYPE_END);
        add_action(RTE_FLOW_ACTION_TYPE_END);
    }
    // Keeps a copy of `bytes` alive as long as the rule (RSS keys and queue lists).
    template <typename T>
    const T* keep_array(const std::vector<T>& v) {
        auto p = std::shared_ptr<T[]>(new T[v.size()]);
        for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i];
        storage_.push_back(std::shared_ptr<const void>(p, p.get()));
        return p.get();
    }

  private:
    template <typename T>
    const T* keep(const T& v) {
        auto p = std::make_shared<T>(v);
        storage_.push_back(p);
        return p.get();
    }
    std::vector<std::shared_ptr<const void>> storage_;
};

// A rule and the versions of it to try, best first (e.g. the two RSS flavours).
struct RuleChoice {
    std::vector<FlowRule> alternatives;
};

struct RulePlan {
    std::vector<RuleChoice> rules;
    // Parts of the design this NIC cannot have, with the reason (for the log line).
    std::vector<std::string> skipped;
};

// The IP-only RSS hash types (connection affinity needs L4 ports out of the hash: the
// two directions of a RoCE connection use different UDP source ports).
constexpr uint64_t kIpOnlyRssTypes = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 |
                                     RTE_ETH_RSS_NONFRAG_IPV4_OTHER | RTE_ETH_RSS_IPV6 |
                                     RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_OTHER;

// The RoCE -> workers (RSS) rule for `vlans` tags (0..2) over IPv4 or IPv6.
FlowRule make_roce_rss_rule(const NicCaps& caps, unsigned vlans, bool ipv6, RssFlavor flavor);
// Every frame -> `queue` (the passthrough or hairpin queue), below the RoCE rules.
FlowRule make_passthrough_rule(uint16_t queue, bool hairpin);

// Splits [first, first+count) into prefix blocks (value, mask) over the 24-bit QPN.
std::vector<std::pair<uint32_t, uint32_t>> split_qpn_range(uint32_t first, uint32_t count);

// The full plan for a port: RoCE RSS rules (each with its RSS flavours), QPN steering
// (when asked and possible), then passthrough to queue `worker_queues` (or the hairpin
// queue after it). Empty `rules` plus a `skipped` reason when the NIC cannot hash on IP
// addresses alone (without that, no rule list keeps connections on one worker).
RulePlan build_insert_rules(const NicCaps& caps, const std::vector<QpnRange>& qpn_ranges = {});

// The passthrough queue index for a port with `worker_queues` worker queues.
inline uint16_t passthrough_queue(const NicCaps& caps) {
    return caps.worker_queues;
}

// "ETH / VLAN / IPV4 / UDP dst=4791 -> RSS(SYMMETRIC_TOEPLITZ, IP, queues 0-3)"
std::string describe(const FlowRule& rule);

}  // namespace insert::offload
