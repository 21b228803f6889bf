// The emulated offload: applies rte_flow pattern/action lists to frames in software, with
// rte_flow's semantics (items stack from ETH outwards; VLAN items consume tags in order, so
// ETH / IPV4 never matches a tagged frame; masks select the compared bits; the rule with
// the lowest priority value wins, then the first added). A port that refuses the rules in
// hardware gets them here, at RX, so steering and passthrough do not depend on the NIC.
// Plain C++ over the rte_flow structs: no EAL, no device, unit-tested frame by frame.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dataplane/offload/flow_rules.hpp"
#include "dataplane/proto/frame_walk.hpp"

namespace insert::offload {

struct Decision {
    enum class Kind : uint8_t {
        unmatched,  // no rule: the NIC default (queue 0)
        queue,      // QUEUE or RSS: `queue`
        drop,
    };
    Kind kind = Kind::unmatched;
    uint16_t queue = 0;
    // The matching rule: SoftClassifier::name(rule). 32 bits make the struct 8 bytes,
    // returned in one register; at 6 bytes GCC assembled it through the stack and reloaded
    // it whole, a store-forwarding stall that took a sixth of the forwarding loop.
    int32_t rule = -1;
};

// Where a frame's headers are (the walk the parser and the software RSS use too), found
// once per frame and shared by every rule.
using FrameLayout = proto::FrameWalk;

// 32-bit Toeplitz hash of `input` (a multiple of 4 bytes, at most 32) with `key` (at least
// input + 4 bytes): rte_softrss over the input's big-endian words.
uint32_t toeplitz(std::span<const uint8_t> input, std::span<const uint8_t> key) noexcept;

class SoftClassifier {
  public:
    // True when the emulation implements every item, mask bit and action of `rule`;
    // otherwise `why` names the first thing it does not.
    static bool supports(const FlowRule& rule, std::string& why);
    // Adds a rule (false and `why` when unsupported; the classifier is unchanged).
    bool add(const FlowRule& rule, std::string& why);

    Decision classify(std::span<const uint8_t> frame) const noexcept {
        // An untagged non-IP frame (ARP, LLDP, ...) has the shape of class 0 whatever its
        // bytes; when no rule of that shape compares bytes, the decision is known ahead.
        if (non_ip_known_ && frame.size() >= proto::kEthHeaderLen) {
            const unsigned type = unsigned{frame[12]} << 8 | frame[13];
            if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6 &&
                type != proto::kEtherTypeVlan && type != proto::kEtherTypeQinQ)
                return non_ip_;
        }
        return classify_by_layout(frame);
    }
    std::size_t size() const { return rules_.size(); }
    const std::string& name(std::size_t i) const { return rules_[i].name; }

  private:
    static constexpr std::size_t kMaxHeader = 40;  // IPv6, the largest compared header
    struct Item {
        rte_flow_item_type type = RTE_FLOW_ITEM_TYPE_END;
        uint8_t len = 0;  // compared bytes
        std::array<uint8_t, kMaxHeader> spec{};
        std::array<uint8_t, kMaxHeader> mask{};
        bool any = true;        // no spec: type only
        int8_t flag_want = -1;  // has_vlan / has_more_vlan: -1 ignore, else 0/1
    };
    struct Rss {
        bool symmetric_function = false;
        uint64_t types = 0;
        std::vector<uint8_t> key;
        std::vector<uint16_t> queues;
    };
    // What a frame must have for a rule's pattern to possibly match (necessary, not
    // sufficient): checked against the frame's layout before the item-by-item match, so
    // that a frame skips the rules of other shapes (a non-IP frame every RoCE rule).
    struct Shape {
        bool ipv4 = false;
        bool ipv6 = false;
        bool udp = false;
        int8_t tags = -1;  // VLAN tags before the L3 item, when the pattern has one
    };
    struct Rule {
        std::string name;
        uint32_t priority = 0;
        std::vector<Item> items;
        Shape shape;
        Decision::Kind kind = Decision::Kind::unmatched;
        uint16_t queue = 0;
        Rss rss;
        Decision decision;  // what classify() returns for it (the queue chosen by RSS)
    };
    bool matches(const Rule& r, std::span<const uint8_t> f, const FrameLayout& l) const noexcept;
    uint16_t rss_queue(const Rss& rss, std::span<const uint8_t> f,
                       const FrameLayout& l) const noexcept;

    // Frames fall into a few shape classes (not Ethernet; else tags x IPv4/IPv6/neither x
    // UDP or not). Per class, the rules that could match a frame of that shape, in priority
    // order: those that compare header bytes, then at most one that the shape alone
    // decides (a pattern of `any` items, such as the passthrough ETH rule), which ends the
    // search. A non-IP frame is thus decided by a table lookup, a non-RoCE UDP datagram by
    // one masked compare; rules shadowed by the shape-decided one are never tried.
    static constexpr std::size_t kShapeClasses = (FrameLayout::kMaxTags + 1) * 3 * 2 + 1;
    static std::size_t shape_class(const FrameLayout& l) noexcept {
        if (!l.eth) return kShapeClasses - 1;
        return (std::size_t{l.tags} * 3 + (l.ipv4 ? 1 : l.ipv6 ? 2 : 0)) * 2 + (l.udp ? 1 : 0);
    }
    static FrameLayout class_layout(std::size_t c);  // a layout of class c (its shape only)
    static bool decided_by_shape(const Rule& r);
    void index_shapes();
    Decision classify_by_layout(std::span<const uint8_t> frame) const noexcept;
    Decision decide(const Rule& r, std::span<const uint8_t> f,
                    const FrameLayout& l) const noexcept {
        if (r.rss.queues.empty()) return r.decision;
        Decision d = r.decision;
        d.queue = rss_queue(r.rss, f, l);
        return d;
    }

    struct ShapeRules {
        std::vector<uint16_t> compared;  // indices into rules_, priority order
        int32_t decided = -1;            // the rule the shape decides after them, if any
    };

    std::vector<Rule> rules_;  // sorted by priority, stable
    std::array<ShapeRules, kShapeClasses> by_shape_;
    bool non_ip_known_ = false;  // class 0 needs no byte compare: its decision is non_ip_
    Decision non_ip_;
    uint16_t reta_size_ = kDefaultRetaSize;
};

}  // namespace insert::offload
