// The one walk over a frame's Ethernet, VLAN and IP headers, bounds-checked against the
// frame: where each header starts and what it is. Three readers share it: the parser (its
// general path: tagged and IPv6 frames), the software RSS that picks a frame's worker
// (pipeline/shard.cpp), and the emulated rte_flow classifier (offload/soft_classifier.cpp),
// so the three cannot disagree on where a header is.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"

namespace insert::proto {

struct FrameWalk {
    // rte_flow patterns may name up to four tags; SPEC.md section 1 allows RoCE two.
    static constexpr unsigned kMaxTags = 4;
    bool eth = false;                         // at least an Ethernet header
    uint8_t tags = 0;                         // VLAN tags after the Ethernet header
    std::array<uint16_t, kMaxTags> tag_at{};  // offset of each tag's TPID
    uint16_t l3_type = 0;                     // EtherType after the tags
    uint16_t l3_at = 0;                       // where the L3 header starts
    bool ipv4 = false;      // version 4, header length >= 20, the header in the frame
    bool ipv6 = false;      // version 6, the fixed header in the frame
    bool fragment = false;  // IPv4: MF or an offset; IPv6: a fragment header with either
    uint8_t l4_proto = 0;   // the protocol after the IP header (and IPv6 extension headers)
    uint16_t l4_at = 0;     // where that protocol's header starts (0: not reached)
    bool udp = false;       // an unfragmented UDP datagram, its 8-byte header in the frame
};

namespace walk_detail {

// IPv6 extension headers as RoCE may carry them (Hop-by-Hop, Routing, Destination options,
// Authentication, an atomic fragment header), at most 8; `hdr` ends after them.
inline void skip_ipv6_extensions(const uint8_t* p, std::size_t len, std::size_t hdr,
                                 FrameWalk& w) noexcept {
    uint8_t next = p[w.l3_at + 6];
    for (int guard = 0; guard < 8 && next != kIpProtoUdp; ++guard) {
        if (len - hdr < 8) return;
        const uint8_t* ext = p + hdr;
        std::size_t ext_len;
        switch (next) {
            case kIpv6HopByHop:
            case kIpv6Routing:
            case kIpv6DestOptions:
                ext_len = (std::size_t{ext[1]} + 1) * 8;
                break;
            case kIpv6Auth:
                ext_len = (std::size_t{ext[1]} + 2) * 4;
                break;
            case kIpv6Fragment:
                if (load_be16(ext + 2) != 0) {  // offset or M: a real fragment
                    w.fragment = true;
                    return;
                }
                ext_len = 8;
                break;
            default:
                return;
        }
        if (len - hdr < ext_len) return;
        next = ext[0];
        hdr += ext_len;
    }
    w.l4_proto = next;
    w.l4_at = static_cast<uint16_t>(hdr);
    w.udp = next == kIpProtoUdp && len - hdr >= kUdpHeaderLen;
}

}  // namespace walk_detail

inline FrameWalk walk_frame(std::span<const uint8_t> frame) noexcept {
    FrameWalk w;
    const uint8_t* p = frame.data();
    const std::size_t len = frame.size();
    if (len < kEthHeaderLen) return w;
    w.eth = true;
    std::size_t off = 12;
    uint16_t type = load_be16(p + off);
    while ((type == kEtherTypeVlan || type == kEtherTypeQinQ) && w.tags < FrameWalk::kMaxTags &&
           off + 2 + kVlanTagLen <= len) {
        w.tag_at[w.tags++] = static_cast<uint16_t>(off);
        off += kVlanTagLen;
        type = load_be16(p + off);
    }
    w.l3_type = type;
    off += 2;
    w.l3_at = static_cast<uint16_t>(off);
    if (type == kEtherTypeIpv4 && len - off >= kIpv4MinHeaderLen && (p[off] >> 4) == 4 &&
        (p[off] & 0x0F) >= 5) {
        w.ipv4 = true;
        const std::size_t ihl = std::size_t{p[off] & 0x0Fu} * 4;
        const uint16_t frag = load_be16(p + off + 6);
        w.fragment = (frag & 0x2000) || (frag & 0x1FFF);
        if (len - off < ihl) return w;
        w.l4_proto = p[off + 9];
        w.l4_at = static_cast<uint16_t>(off + ihl);
        w.udp = !w.fragment && w.l4_proto == kIpProtoUdp && len - off >= ihl + kUdpHeaderLen;
    } else if (type == kEtherTypeIpv6 && len - off >= kIpv6HeaderLen && (p[off] >> 4) == 6) {
        w.ipv6 = true;
        walk_detail::skip_ipv6_extensions(p, len, off + kIpv6HeaderLen, w);
    }
    return w;
}

}  // namespace insert::proto
