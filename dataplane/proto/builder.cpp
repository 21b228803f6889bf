#include "dataplane/proto/builder.hpp"

#include <cstring>

#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::proto {

namespace {

std::size_t l3_header_len(const FrameSpec& s) {
    return s.src_ip.is_v4() ? kIpv4MinHeaderLen : kIpv6HeaderLen;
}

std::size_t udp_length(const FrameSpec& s) {
    const OpcodeInfo& info = opcode_info(s.t.bth.opcode);
    return kUdpHeaderLen + kBthLen + info.ext_len + s.payload_len + s.t.bth.pad + kIcrcLen;
}

uint16_t ipv4_checksum(const uint8_t* h, std::size_t len) {
    uint32_t sum = 0;
    for (std::size_t i = 0; i < len; i += 2) sum += load_be16(h + i);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

uint8_t* write_extensions(uint8_t* h, const TransportHeaders& t, uint16_t ext) {
    if (ext & kXrcEth) {
        h[0] = 0;
        store_be24(h + 1, t.xrc_srqn);
        h += 4;
    }
    if (ext & kDeth) {
        store_be32(h, t.deth.qkey);
        h[4] = 0;
        store_be24(h + 5, t.deth.src_qp);
        h += 8;
    }
    if (ext & kReth) {
        store_be64(h, t.reth.va);
        store_be32(h + 8, t.reth.rkey);
        store_be32(h + 12, t.reth.dma_len);
        h += 16;
    }
    if (ext & kAtomicEth) {
        store_be64(h, t.atomic.va);
        store_be32(h + 8, t.atomic.rkey);
        store_be64(h + 12, t.atomic.swap_add);
        store_be64(h + 20, t.atomic.compare);
        h += 28;
    }
    if (ext & kAeth) {
        h[0] = t.aeth.syndrome;
        store_be24(h + 1, t.aeth.msn);
        h += 4;
    }
    if (ext & kAtomicAckEth) {
        store_be64(h, t.atomic_ack);
        h += 8;
    }
    if (ext & kImmDt) {
        store_be32(h, t.imm);
        h += 4;
    }
    if (ext & kIeth) {
        store_be32(h, t.ieth_rkey);
        h += 4;
    }
    if (ext & kCnpPad) {
        std::memset(h, 0, 16);
        h += 16;
    }
    return h;
}

}  // namespace

std::size_t frame_length(const FrameSpec& s) noexcept {
    return kEthHeaderLen + s.vlan_count * kVlanTagLen + l3_header_len(s) + udp_length(s);
}

std::size_t build_frame(const FrameSpec& s, std::span<uint8_t> out) noexcept {
    const OpcodeInfo& info = opcode_info(s.t.bth.opcode);
    if (!info.valid || s.vlan_count > kMaxVlanTags) return 0;
    const std::size_t total = frame_length(s);
    if (out.size() < total || udp_length(s) > 0xFFFF) return 0;
    uint8_t* f = out.data();

    std::memcpy(f, s.dst_mac.data(), 6);
    std::memcpy(f + 6, s.src_mac.data(), 6);
    std::size_t off = 12;
    for (uint8_t i = 0; i < s.vlan_count; ++i) {
        store_be16(f + off, s.vlan_tpid[i]);
        store_be16(f + off + 2, s.vlan_tci[i]);
        off += kVlanTagLen;
    }
    const bool v4 = s.src_ip.is_v4();
    store_be16(f + off, v4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
    off += 2;

    const std::size_t udp_len = udp_length(s);
    uint8_t* ip = f + off;
    const uint8_t tos = static_cast<uint8_t>((s.dscp << 2) | (s.ecn & 3));
    if (v4) {
        ip[0] = 0x45;
        ip[1] = tos;
        store_be16(ip + 2, static_cast<uint16_t>(kIpv4MinHeaderLen + udp_len));
        store_be16(ip + 4, s.ipv4_id);
        store_be16(ip + 6, 0x4000);  // DF
        ip[8] = s.ttl;
        ip[9] = kIpProtoUdp;
        store_be16(ip + 10, 0);
        std::memcpy(ip + 12, &s.src_ip.bytes[12], 4);
        std::memcpy(ip + 16, &s.dst_ip.bytes[12], 4);
        store_be16(ip + 10, ipv4_checksum(ip, kIpv4MinHeaderLen));
    } else {
        store_be32(ip, (6u << 28) | (uint32_t{tos} << 20) | (s.flow_label & 0xFFFFF));
        store_be16(ip + 4, static_cast<uint16_t>(udp_len));
        ip[6] = kIpProtoUdp;
        ip[7] = s.ttl;
        std::memcpy(ip + 8, s.src_ip.bytes.data(), 16);
        std::memcpy(ip + 24, s.dst_ip.bytes.data(), 16);
    }
    off += l3_header_len(s);

    uint8_t* udp = f + off;
    store_be16(udp, s.src_port);
    store_be16(udp + 2, s.dst_port);
    store_be16(udp + 4, static_cast<uint16_t>(udp_len));
    store_be16(udp + 6, 0);
    off += kUdpHeaderLen;

    const Bth& b = s.t.bth;
    uint8_t* bth = f + off;
    bth[0] = b.opcode;
    bth[1] = static_cast<uint8_t>((b.se ? 0x80 : 0) | (b.migreq ? 0x40 : 0) | ((b.pad & 3) << 4) |
                                  (b.tver & 0x0F));
    store_be16(bth + 2, b.pkey);
    bth[4] = static_cast<uint8_t>((b.fecn ? 0x80 : 0) | (b.becn ? 0x40 : 0));
    store_be24(bth + 5, b.dest_qp);
    bth[8] = b.ack_req ? 0x80 : 0;
    store_be24(bth + 9, b.psn);
    uint8_t* h = write_extensions(bth + kBthLen, s.t, info.ext);

    if (s.payload)
        std::memcpy(h, s.payload, s.payload_len);
    else
        for (uint32_t i = 0; i < s.payload_len; ++i) h[i] = static_cast<uint8_t>(i * 7 + 1);
    h += s.payload_len;
    std::memset(h, 0, b.pad);
    h += b.pad;

    // The ICRC covers what was just written; the parser gives the offsets it needs.
    ParsedPacket parsed;
    std::span<const uint8_t> frame(f, total);
    if (parse_frame(frame, parsed) == Verdict::roce) {
        uint32_t icrc = compute_icrc(frame, parsed);
        if (s.corrupt_icrc) icrc = ~icrc;
        h[0] = static_cast<uint8_t>(icrc);
        h[1] = static_cast<uint8_t>(icrc >> 8);
        h[2] = static_cast<uint8_t>(icrc >> 16);
        h[3] = static_cast<uint8_t>(icrc >> 24);
    } else {
        std::memset(h, 0, kIcrcLen);  // a non-4791 destination port: no ICRC is defined
    }
    return total;
}

}  // namespace insert::proto
