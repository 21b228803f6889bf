#include "dataplane/offload/soft_classifier.hpp"

#include <algorithm>
#include <cstring>

#include <rte_thash.h>

#include "dataplane/proto/byte_order.hpp"

namespace insert::offload {

namespace {

using proto::kIpv4MinHeaderLen;
using proto::kIpv6HeaderLen;
using proto::kUdpHeaderLen;
constexpr std::size_t kBthLen = 12;

// The device key NICs ship with (Microsoft's RSS verification key); what a port hashes
// with when an RSS action gives no key.
constexpr uint8_t kDefaultKey[kDefaultRssKeyLen] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

// Bytes of the header an item compares, and whether the emulation knows the item.
bool header_len(rte_flow_item_type t, uint8_t& len) {
    switch (t) {
        case RTE_FLOW_ITEM_TYPE_ETH:
            len = proto::kEthHeaderLen;
            return true;
        case RTE_FLOW_ITEM_TYPE_VLAN:
            len = proto::kVlanTagLen;
            return true;
        case RTE_FLOW_ITEM_TYPE_IPV4:
            len = kIpv4MinHeaderLen;
            return true;
        case RTE_FLOW_ITEM_TYPE_IPV6:
            len = kIpv6HeaderLen;
            return true;
        case RTE_FLOW_ITEM_TYPE_UDP:
            len = kUdpHeaderLen;
            return true;
#if INSERT_HAVE_IB_BTH
        case RTE_FLOW_ITEM_TYPE_IB_BTH:
            len = kBthLen;
            return true;
#endif
        default:
            return false;
    }
}

// The header bytes of an item's spec/mask struct (all start with the wire header).
const uint8_t* header_bytes(const void* item_struct) {
    return static_cast<const uint8_t*>(item_struct);
}

bool masked_equal(const uint8_t* frame, const uint8_t* spec, const uint8_t* mask, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if ((frame[i] & mask[i]) != (spec[i] & mask[i])) return false;
    return true;
}

}  // namespace

uint32_t toeplitz(std::span<const uint8_t> input, std::span<const uint8_t> key) noexcept {
    uint32_t words[8];
    const uint32_t n = static_cast<uint32_t>(input.size() / 4);
    for (uint32_t i = 0; i < n; ++i) words[i] = proto::load_be32(input.data() + 4 * i);
    return rte_softrss(words, n, key.data());
}

bool SoftClassifier::supports(const FlowRule& rule, std::string& why) {
    if (!rule.attr.ingress || rule.attr.egress || rule.attr.transfer || rule.attr.group != 0) {
        why = rule.name + ": only ingress rules of group 0";
        return false;
    }
    bool first = true;
    for (const rte_flow_item& it : rule.pattern) {
        if (it.type == RTE_FLOW_ITEM_TYPE_END) break;
        if (it.type == RTE_FLOW_ITEM_TYPE_VOID) continue;
        uint8_t len = 0;
        if (!header_len(it.type, len)) {
            why = rule.name + ": item type " + std::to_string(static_cast<int>(it.type)) +
                  " not emulated";
            return false;
        }
        if (first && it.type != RTE_FLOW_ITEM_TYPE_ETH) {
            why = rule.name + ": patterns must start with ETH";
            return false;
        }
        first = false;
        if (it.last) {
            why = rule.name + ": ranges (item.last) not emulated";
            return false;
        }
        if (it.spec && !it.mask) {
            why = rule.name + ": implicit default masks not emulated";
            return false;
        }
        if (it.type == RTE_FLOW_ITEM_TYPE_IPV6 && it.mask) {
            const auto* m = static_cast<const rte_flow_item_ipv6*>(it.mask);
            if (m->has_hop_ext || m->has_route_ext || m->has_frag_ext || m->has_auth_ext ||
                m->has_esp_ext || m->has_dest_ext || m->has_mobil_ext || m->has_hip_ext ||
                m->has_shim6_ext) {
                why = rule.name + ": IPv6 extension flags not emulated";
                return false;
            }
        }
    }
    bool fate = false;
    for (const rte_flow_action& a : rule.actions) {
        if (a.type == RTE_FLOW_ACTION_TYPE_END) break;
        switch (a.type) {
            case RTE_FLOW_ACTION_TYPE_VOID:
                break;
            case RTE_FLOW_ACTION_TYPE_QUEUE:
            case RTE_FLOW_ACTION_TYPE_DROP:
                fate = true;
                break;
            case RTE_FLOW_ACTION_TYPE_RSS: {
                const auto* r = static_cast<const rte_flow_action_rss*>(a.conf);
                if (r == nullptr || r->queue_num == 0 || r->level > 1 ||
                    (r->func != RTE_ETH_HASH_FUNCTION_TOEPLITZ &&
                     r->func != RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ &&
                     r->func != RTE_ETH_HASH_FUNCTION_DEFAULT) ||
                    (r->types & ~kIpOnlyRssTypes) != 0 || (r->key_len != 0 && r->key_len < 36)) {
                    why = rule.name + ": RSS emulated for Toeplitz over IP addresses only";
                    return false;
                }
                fate = true;
                break;
            }
            default:
                why = rule.name + ": action type " + std::to_string(static_cast<int>(a.type)) +
                      " not emulated";
                return false;
        }
    }
    if (!fate) {
        why = rule.name + ": no fate action (QUEUE, RSS or DROP)";
        return false;
    }
    return true;
}

bool SoftClassifier::add(const FlowRule& rule, std::string& why) {
    if (!supports(rule, why)) return false;
    Rule r;
    r.name = rule.name;
    r.priority = rule.attr.priority;
    for (const rte_flow_item& it : rule.pattern) {
        if (it.type == RTE_FLOW_ITEM_TYPE_END) break;
        if (it.type == RTE_FLOW_ITEM_TYPE_VOID) continue;
        Item item;
        item.type = it.type;
        header_len(it.type, item.len);
        if (it.spec) {
            item.any = false;
            std::memcpy(item.spec.data(), header_bytes(it.spec), item.len);
            std::memcpy(item.mask.data(), header_bytes(it.mask), item.len);
            if (it.type == RTE_FLOW_ITEM_TYPE_ETH &&
                static_cast<const rte_flow_item_eth*>(it.mask)->has_vlan)
                item.flag_want = static_cast<const rte_flow_item_eth*>(it.spec)->has_vlan;
            if (it.type == RTE_FLOW_ITEM_TYPE_VLAN &&
                static_cast<const rte_flow_item_vlan*>(it.mask)->has_more_vlan)
                item.flag_want = static_cast<const rte_flow_item_vlan*>(it.spec)->has_more_vlan;
        }
        r.items.push_back(item);
    }
    int8_t vlans = 0;
    for (const Item& item : r.items) {
        if (item.type == RTE_FLOW_ITEM_TYPE_VLAN) ++vlans;
        if (item.type == RTE_FLOW_ITEM_TYPE_IPV4 || item.type == RTE_FLOW_ITEM_TYPE_IPV6) {
            (item.type == RTE_FLOW_ITEM_TYPE_IPV4 ? r.shape.ipv4 : r.shape.ipv6) = true;
            r.shape.tags = vlans;  // matches(): the L3 item follows every tag
        }
        if (item.type == RTE_FLOW_ITEM_TYPE_UDP) r.shape.udp = true;
    }
    for (const rte_flow_action& a : rule.actions) {
        if (a.type == RTE_FLOW_ACTION_TYPE_END) break;
        if (a.type == RTE_FLOW_ACTION_TYPE_QUEUE) {
            r.kind = Decision::Kind::queue;
            r.queue =
                static_cast<uint16_t>(static_cast<const rte_flow_action_queue*>(a.conf)->index);
        } else if (a.type == RTE_FLOW_ACTION_TYPE_DROP) {
            r.kind = Decision::Kind::drop;
        } else if (a.type == RTE_FLOW_ACTION_TYPE_RSS) {
            const auto* c = static_cast<const rte_flow_action_rss*>(a.conf);
            r.kind = Decision::Kind::queue;
            r.rss.symmetric_function = c->func == RTE_ETH_HASH_FUNCTION_SYMMETRIC_TOEPLITZ;
            r.rss.types = c->types ? c->types : kIpOnlyRssTypes;
            if (c->key && c->key_len)
                r.rss.key.assign(c->key, c->key + c->key_len);
            else
                r.rss.key.assign(kDefaultKey, kDefaultKey + kDefaultRssKeyLen);
            r.rss.queues.assign(c->queue, c->queue + c->queue_num);
        }
    }
    // Stable by priority: equal priorities keep their order of addition.
    auto pos = std::upper_bound(rules_.begin(), rules_.end(), r.priority,
                                [](uint32_t p, const Rule& x) { return p < x.priority; });
    rules_.insert(pos, std::move(r));
    index_shapes();
    return true;
}

FrameLayout SoftClassifier::class_layout(std::size_t c) {
    FrameLayout l;
    if (c == kShapeClasses - 1) return l;  // not even an Ethernet header
    l.eth = true;
    l.udp = (c & 1) != 0;
    l.ipv4 = (c / 2) % 3 == 1;
    l.ipv6 = (c / 2) % 3 == 2;
    l.tags = static_cast<uint8_t>(c / 6);
    return l;
}

bool SoftClassifier::decided_by_shape(const Rule& r) {
    // matches() reads frame bytes only for items with a spec, and the frame length only
    // for IB_BTH; with neither, its answer follows from the layout's shape fields.
    for (const Item& it : r.items) {
        if (!it.any || it.flag_want >= 0) return false;
#if INSERT_HAVE_IB_BTH
        if (it.type == RTE_FLOW_ITEM_TYPE_IB_BTH) return false;
#endif
    }
    return true;
}

void SoftClassifier::index_shapes() {
    for (std::size_t i = 0; i < rules_.size(); ++i) {
        Rule& r = rules_[i];
        r.decision = Decision{r.kind, r.queue, static_cast<int32_t>(i)};
    }
    static constexpr uint8_t kNoBytes[1] = {};  // shape-decided rules read no frame byte
    for (std::size_t c = 0; c < kShapeClasses; ++c) {
        const FrameLayout l = class_layout(c);
        ShapeRules& out = by_shape_[c];
        out = ShapeRules{};
        for (std::size_t i = 0; i < rules_.size() && out.decided < 0; ++i) {
            const Rule& r = rules_[i];
            const Shape& s = r.shape;
            if ((s.ipv4 && !l.ipv4) || (s.ipv6 && !l.ipv6) || (s.udp && !l.udp) ||
                (s.tags >= 0 && s.tags != l.tags))
                continue;
            if (!decided_by_shape(r))
                out.compared.push_back(static_cast<uint16_t>(i));
            else if (matches(r, {kNoBytes, 0}, l))
                out.decided = static_cast<int32_t>(i);
        }
    }
    // Class 0: an Ethernet header, no tag, no IP (shape_class() of such a layout).
    const ShapeRules& plain = by_shape_[0];
    non_ip_known_ =
        plain.compared.empty() &&
        (plain.decided < 0 || rules_[static_cast<std::size_t>(plain.decided)].rss.queues.empty());
    non_ip_ =
        plain.decided < 0 ? Decision{} : rules_[static_cast<std::size_t>(plain.decided)].decision;
}

bool SoftClassifier::matches(const Rule& r, std::span<const uint8_t> f,
                             const FrameLayout& l) const noexcept {
    const uint8_t* p = f.data();
    unsigned tag = 0;
    rte_flow_item_type prev = RTE_FLOW_ITEM_TYPE_END;
    for (const Item& it : r.items) {
        const uint8_t* at = nullptr;
        switch (it.type) {
            case RTE_FLOW_ITEM_TYPE_ETH:
                if (!l.eth) return false;
                at = p;
                if (it.flag_want >= 0 && (l.tags > 0) != (it.flag_want == 1)) return false;
                break;
            case RTE_FLOW_ITEM_TYPE_VLAN:
                if (tag >= l.tags) return false;
                at = p + l.tag_at[tag] + 2;  // TCI, then the inner EtherType
                ++tag;
                if (it.flag_want >= 0 && (tag < l.tags) != (it.flag_want == 1)) return false;
                break;
            case RTE_FLOW_ITEM_TYPE_IPV4:
                if (tag != l.tags || !l.ipv4) return false;
                at = p + l.l3_at;
                break;
            case RTE_FLOW_ITEM_TYPE_IPV6:
                if (tag != l.tags || !l.ipv6) return false;
                at = p + l.l3_at;
                break;
            case RTE_FLOW_ITEM_TYPE_UDP:
                if ((prev != RTE_FLOW_ITEM_TYPE_IPV4 && prev != RTE_FLOW_ITEM_TYPE_IPV6) || !l.udp)
                    return false;
                at = p + l.l4_at;
                break;
#if INSERT_HAVE_IB_BTH
            case RTE_FLOW_ITEM_TYPE_IB_BTH:
                if (prev != RTE_FLOW_ITEM_TYPE_UDP || f.size() < l.l4_at + kUdpHeaderLen + kBthLen)
                    return false;
                at = p + l.l4_at + kUdpHeaderLen;
                break;
#endif
            default:
                return false;
        }
        if (!it.any && !masked_equal(at, it.spec.data(), it.mask.data(), it.len)) return false;
        prev = it.type;
    }
    return true;
}

uint16_t SoftClassifier::rss_queue(const Rss& rss, std::span<const uint8_t> f,
                                   const FrameLayout& l) const noexcept {
    uint8_t input[32];
    std::size_t n = 0;
    const bool v4 =
        l.ipv4 &&
        (rss.types & (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_OTHER));
    const bool v6 =
        l.ipv6 &&
        (rss.types & (RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_OTHER));
    uint32_t hash = 0;  // types the action does not cover hash to 0, as on a NIC
    if (v4 || v6) {
        const std::size_t alen = v4 ? 4 : 16;
        const uint8_t* src = f.data() + l.l3_at + (v4 ? 12 : 8);
        const uint8_t* dst = src + alen;
        if (rss.symmetric_function && std::memcmp(src, dst, alen) > 0) std::swap(src, dst);
        std::memcpy(input, src, alen);
        std::memcpy(input + alen, dst, alen);
        n = 2 * alen;
        hash = toeplitz({input, n}, rss.key);
    }
    const uint16_t entry = static_cast<uint16_t>(hash & (reta_size_ - 1));
    return rss.queues[entry % rss.queues.size()];
}

Decision SoftClassifier::classify_by_layout(std::span<const uint8_t> frame) const noexcept {
    const FrameLayout l = proto::walk_frame(frame);
    const ShapeRules& candidates = by_shape_[shape_class(l)];
    for (const uint16_t i : candidates.compared)
        if (matches(rules_[i], frame, l)) return decide(rules_[i], frame, l);
    if (candidates.decided >= 0) return decide(rules_[candidates.decided], frame, l);
    return Decision{};
}

}  // namespace insert::offload
