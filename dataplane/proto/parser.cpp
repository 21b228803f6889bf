#include "dataplane/proto/parser.hpp"

#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/frame_walk.hpp"

namespace insert::proto {

std::string_view malformed_name(Malformed m) {
    switch (m) {
        case Malformed::none:
            return "none";
        case Malformed::length_mismatch:
            return "length_mismatch";
        case Malformed::truncated:
            return "truncated";
        case Malformed::reserved_opcode:
            return "reserved_opcode";
    }
    return "unknown";
}

namespace {

// The IP header's fields in a datagram the walk found to be unfragmented UDP; the lengths
// are checked against the UDP header by the caller.
struct L3Lengths {
    int64_t ip_payload_len = 0;  // bytes from the UDP header to the end of the datagram
    bool beyond_frame = false;   // IP length says more than the frame holds
};

L3Lengths read_ipv4(const uint8_t* p, std::size_t len, const FrameWalk& w, ParsedPacket& out) {
    const uint8_t* ip = p + w.l3_at;
    const std::size_t ihl = std::size_t{ip[0] & 0x0Fu} * 4;
    out.ipv6 = false;
    out.dscp = ip[1] >> 2;
    out.ecn = ip[1] & 0x3;
    out.src_ip = IpAddress::v4_bytes(ip + 12);
    out.dst_ip = IpAddress::v4_bytes(ip + 16);
    const std::size_t total = load_be16(ip + 2);
    return {static_cast<int64_t>(total) - static_cast<int64_t>(ihl), total > len - w.l3_at};
}

L3Lengths read_ipv6(const uint8_t* p, std::size_t len, const FrameWalk& w, ParsedPacket& out) {
    const uint8_t* ip = p + w.l3_at;
    const uint8_t tclass = static_cast<uint8_t>(((ip[0] & 0x0F) << 4) | (ip[1] >> 4));
    const std::size_t payload = load_be16(ip + 4);
    out.ipv6 = true;
    out.dscp = tclass >> 2;
    out.ecn = tclass & 0x3;
    out.src_ip = IpAddress::v6_bytes(ip + 8);
    out.dst_ip = IpAddress::v6_bytes(ip + 24);
    const std::size_t extensions = w.l4_at - w.l3_at - kIpv6HeaderLen;
    return {static_cast<int64_t>(payload) - static_cast<int64_t>(extensions),
            kIpv6HeaderLen + payload > len - w.l3_at};
}

// Decodes the extension headers in wire order; the caller has checked they fit.
void parse_extensions(const uint8_t* h, uint16_t ext, TransportHeaders& t) {
    t.ext = ext;
    if (ext == 0) return;  // most packets: the Middles of long messages
    if (ext & kXrcEth) {
        t.xrc_srqn = load_be24(h + 1);
        h += 4;
    }
    if (ext & kDeth) {
        t.deth.qkey = load_be32(h);
        t.deth.src_qp = load_be24(h + 5);
        h += 8;
    }
    if (ext & kReth) {
        t.reth.va = load_be64(h);
        t.reth.rkey = load_be32(h + 8);
        t.reth.dma_len = load_be32(h + 12);
        h += 16;
    }
    if (ext & kAtomicEth) {
        t.atomic.va = load_be64(h);
        t.atomic.rkey = load_be32(h + 8);
        t.atomic.swap_add = load_be64(h + 12);
        t.atomic.compare = load_be64(h + 20);
        h += 28;
    }
    if (ext & kAeth) {
        t.aeth.syndrome = h[0];
        t.aeth.msn = load_be24(h + 1);
        h += 4;
    }
    if (ext & kAtomicAckEth) {
        t.atomic_ack = load_be64(h);
        h += 8;
    }
    if (ext & kImmDt) {
        t.imm = load_be32(h);
        h += 4;
    }
    if (ext & kIeth) t.ieth_rkey = load_be32(h);
}

Verdict set_malformed(ParsedPacket& out, Malformed why) {
    out.malformed = why;
    out.verdict = Verdict::malformed;
    return out.verdict;
}

// The BTH and what follows it, in a datagram whose UDP length (out.udp_len) agrees with its
// IP header and frame and holds at least a BTH; out.udp_len set.
Verdict parse_transport(const uint8_t* p, std::size_t l4_offset, ParsedPacket& out) {
    const std::size_t bth_off = l4_offset + kUdpHeaderLen;
    const uint8_t* bth = p + bth_off;
    out.bth_offset = static_cast<uint16_t>(bth_off);
    Bth& b = out.t.bth;
    b.opcode = bth[0];
    b.se = (bth[1] & 0x80) != 0;
    b.migreq = (bth[1] & 0x40) != 0;
    b.pad = (bth[1] >> 4) & 0x3;
    b.tver = bth[1] & 0x0F;
    b.pkey = load_be16(bth + 2);
    b.fecn = (bth[4] & 0x80) != 0;
    b.becn = (bth[4] & 0x40) != 0;
    // 24-bit fields each after a byte of flags: one 32-bit load, the flags masked off.
    b.dest_qp = load_be32(bth + 4) & 0xFFFFFF;
    b.ack_req = (bth[8] & 0x80) != 0;
    b.psn = load_be32(bth + 8) & 0xFFFFFF;

    const OpcodeInfo& info = opcode_info(b.opcode);
    if (!info.valid) return set_malformed(out, Malformed::reserved_opcode);

    const int64_t payload =
        static_cast<int64_t>(out.udp_len) -
        static_cast<int64_t>(kUdpHeaderLen + kBthLen + info.ext_len + b.pad + kIcrcLen);
    if (payload < 0) return set_malformed(out, Malformed::truncated);

    parse_extensions(bth + kBthLen, info.ext, out.t);
    out.payload_offset = static_cast<uint32_t>(bth_off + kBthLen + info.ext_len);
    out.payload_len = static_cast<int32_t>(payload);
    out.icrc_offset = static_cast<uint32_t>(l4_offset + out.udp_len - kIcrcLen);
    out.verdict = Verdict::roce;
    return out.verdict;
}

// Nearly every RoCE frame: untagged IPv4 with a 20-byte header, not a fragment, UDP to
// port 4791, the IP and UDP lengths agreeing with each other and the frame and leaving room
// for a BTH. Checked with fixed offsets, and `out` filled up to the UDP header, or false
// (nothing decided: the general path takes the frame, and decides the same for these).
constexpr std::size_t kPlainIpv4 = kEthHeaderLen;
constexpr std::size_t kPlainUdp = kPlainIpv4 + kIpv4MinHeaderLen;
bool parse_plain_ipv4_udp(const uint8_t* p, std::size_t len, ParsedPacket& out) {
    if (len < kPlainUdp + kUdpHeaderLen + kBthLen || load_be16(p + 12) != kEtherTypeIpv4)
        return false;
    const uint8_t* ip = p + kPlainIpv4;
    const uint8_t* udp = p + kPlainUdp;
    if (ip[0] != 0x45 || ip[9] != kIpProtoUdp || (load_be16(ip + 6) & 0x3FFF) != 0 ||
        load_be16(udp + 2) != kRoceV2Port)
        return false;
    const std::size_t total = load_be16(ip + 2);
    const std::size_t udp_len = load_be16(udp + 4);
    if (total > len - kPlainIpv4 || udp_len != total - kIpv4MinHeaderLen ||
        udp_len < kUdpHeaderLen + kBthLen)
        return false;
    out.l3_offset = kPlainIpv4;
    out.ipv6 = false;
    out.dscp = ip[1] >> 2;
    out.ecn = ip[1] & 0x3;
    out.src_ip = IpAddress::v4_bytes(ip + 12);
    out.dst_ip = IpAddress::v4_bytes(ip + 16);
    out.l4_offset = kPlainUdp;
    out.src_port = load_be16(udp);
    out.dst_port = kRoceV2Port;
    out.udp_len = static_cast<uint32_t>(udp_len);
    return true;
}

}  // namespace

Verdict parse_frame(std::span<const uint8_t> frame, ParsedPacket& out) noexcept {
    out.verdict = Verdict::non_roce;
    out.malformed = Malformed::none;
    out.vlan_count = 0;
    out.frame = frame.data();
    out.frame_len = static_cast<uint32_t>(frame.size());
    const uint8_t* p = frame.data();
    const std::size_t len = frame.size();
    if (parse_plain_ipv4_udp(p, len, out)) return parse_transport(p, kPlainUdp, out);
    // Tagged frames, IPv6, IPv4 with options: the walk finds the headers.
    const FrameWalk w = walk_frame(frame);
    if (!w.eth || w.tags > kMaxVlanTags) return out.verdict;
    for (unsigned i = 0; i < w.tags; ++i) out.vlan_tci[i] = load_be16(p + w.tag_at[i] + 2);
    out.vlan_count = w.tags;
    out.l3_offset = w.l3_at;
    if (!w.udp) return out.verdict;  // also every non-IP frame
    const L3Lengths l3 = w.ipv4 ? read_ipv4(p, len, w, out) : read_ipv6(p, len, w, out);

    const uint8_t* udp = p + w.l4_at;
    out.l4_offset = w.l4_at;
    out.src_port = load_be16(udp);
    out.dst_port = load_be16(udp + 2);
    if (out.dst_port != kRoceV2Port) return out.verdict;

    // From here on the packet is RoCE by the destination-port rule; it is either
    // well-formed or malformed with the first reason that applies (SPEC.md order).
    out.udp_len = load_be16(udp + 4);
    if (l3.beyond_frame || static_cast<int64_t>(out.udp_len) != l3.ip_payload_len)
        return set_malformed(out, Malformed::length_mismatch);
    if (out.udp_len < kUdpHeaderLen + kBthLen) return set_malformed(out, Malformed::truncated);
    return parse_transport(p, w.l4_at, out);
}

}  // namespace insert::proto
