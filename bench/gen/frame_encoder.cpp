#include "bench/gen/frame_encoder.hpp"

#include <cstring>

#include "bench/gen/cm_mad.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::gen {

namespace {

using proto::store_be16;
using proto::store_be32;

constexpr uint8_t kRocePcp = 3;  // the usual lossless priority for RoCE
constexpr std::size_t kMinFrame = 60;
constexpr uint16_t kEtherTypeArp = 0x0806;
constexpr uint8_t kIpProtoTcp = 6;

// The bytes build_frame() writes for a null payload (i * 7 + 1), precomputed so that the
// builder copies them instead of generating them byte by byte.
const std::array<uint8_t, kMaxFrameBytes>& payload_pattern() {
    static const std::array<uint8_t, kMaxFrameBytes> pattern = [] {
        std::array<uint8_t, kMaxFrameBytes> p{};
        for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
        return p;
    }();
    return pattern;
}

}  // namespace

// For each payload length n, the CRC of the pattern's first n bytes, and the factor that
// joins a CRC to n following bytes (n up to the largest payload plus 3 pad bytes): a
// frame's ICRC then costs a CRC pass over its headers only (~60 bytes of ~350 on `large`,
// where the CRC of whole frames was 6% of the run), joined with its payload's.
struct PayloadCrcs {
    std::vector<uint32_t> pattern;
    std::vector<uint32_t> factor;
};

namespace {

const PayloadCrcs& payload_crcs() {
    static const PayloadCrcs crcs = [] {
        PayloadCrcs c;
        const auto& pattern = payload_pattern();
        c.pattern.resize(pattern.size() + 1);
        for (std::size_t n = 0; n < pattern.size(); ++n)
            c.pattern[n + 1] = proto::crc32_ieee(c.pattern[n], &pattern[n], 1);
        c.factor.resize(pattern.size() + 4);
        proto::crc32_length_factors(c.factor);
        return c;
    }();
    return crcs;
}

proto::MacAddress host_mac(uint16_t host) {
    return {0x02, 0x1E, 0x47, 0x00, static_cast<uint8_t>(host >> 8), static_cast<uint8_t>(host)};
}

// The host whose NIC sent the packet: its own, but for a spoofed injection's attacker.
uint16_t nic_of(const SimPacket& p) {
    return p.nic_host == kNoHost ? p.src_host : p.nic_host;
}

uint16_t checksum(const uint8_t* h, std::size_t len) {
    uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < len; i += 2) sum += proto::load_be16(h + i);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

void fix_ipv4_checksum(uint8_t* ip) {
    store_be16(ip + 10, 0);
    store_be16(ip + 10, checksum(ip, proto::kIpv4MinHeaderLen));
}

// A plain IPv4 header (background frames are IPv4 whatever the hosts are).
void write_ipv4(uint8_t* ip, uint8_t proto_num, uint16_t total_len, uint16_t id, uint16_t frag,
                uint32_t src, uint32_t dst) {
    ip[0] = 0x45;
    ip[1] = 0;
    store_be16(ip + 2, total_len);
    store_be16(ip + 4, id);
    store_be16(ip + 6, frag);
    ip[8] = 64;
    ip[9] = proto_num;
    store_be32(ip + 12, src);
    store_be32(ip + 16, dst);
    fix_ipv4_checksum(ip);
}

}  // namespace

FrameEncoder::FrameEncoder(const Scenario& scenario, const Simulator& sim)
    : sc_(scenario), sim_(sim), ipv4_id_(scenario.hosts.size(), 0), payload_crcs_(payload_crcs()) {}

std::size_t FrameEncoder::encode_into(const SimPacket& p, uint8_t* out) {
    switch (p.cls) {
        case PacketClass::roce:
            return encode_roce(p, out);
        case PacketClass::background:
            return encode_background(p, out);
        case PacketClass::malformed:
            return encode_malformed(p, out);
    }
    return 0;
}

std::size_t FrameEncoder::encode_roce(const SimPacket& p, uint8_t* out) {
    return p.cm == CmKind::none ? encode_roce_direct(p, out) : encode_roce_with_builder(p, out);
}

namespace {

// The extension headers of `ext` in IBTA order, as proto::build_frame lays them out.
uint8_t* write_ext_headers(uint8_t* h, const proto::TransportHeaders& t, uint16_t ext) {
    using proto::store_be24;
    using proto::store_be64;
    if (ext & proto::kXrcEth) {
        h[0] = 0;
        store_be24(h + 1, t.xrc_srqn);
        h += 4;
    }
    if (ext & proto::kDeth) {
        store_be32(h, t.deth.qkey);
        h[4] = 0;
        store_be24(h + 5, t.deth.src_qp);
        h += 8;
    }
    if (ext & proto::kReth) {
        store_be64(h, t.reth.va);
        store_be32(h + 8, t.reth.rkey);
        store_be32(h + 12, t.reth.dma_len);
        h += 16;
    }
    if (ext & proto::kAtomicEth) {
        store_be64(h, t.atomic.va);
        store_be32(h + 8, t.atomic.rkey);
        store_be64(h + 12, t.atomic.swap_add);
        store_be64(h + 20, t.atomic.compare);
        h += 28;
    }
    if (ext & proto::kAeth) {
        h[0] = t.aeth.syndrome;
        store_be24(h + 1, t.aeth.msn);
        h += 4;
    }
    if (ext & proto::kAtomicAckEth) {
        store_be64(h, t.atomic_ack);
        h += 8;
    }
    if (ext & proto::kImmDt) {
        store_be32(h, t.imm);
        h += 4;
    }
    if (ext & proto::kIeth) {
        store_be32(h, t.ieth_rkey);
        h += 4;
    }
    if (ext & proto::kCnpPad) {
        std::memset(h, 0, 16);
        h += 16;
    }
    return h;
}

// The ICRC (dataplane/proto/icrc.hpp) of the frame whose IP header starts at `ip` (with at
// least 8 bytes of frame before it) and whose headers end at `payload`, followed by
// `payload_len` bytes of the payload pattern and `pad` zero bytes. The headers' CRC is
// computed in place: the 8 bytes before the IP header stand in for the LRH and the
// variant fields are set to ones for the time of one CRC pass over the contiguous bytes,
// then restored (proto's compute_icrc() copies the masked headers aside instead, which
// costs a second CRC call per frame); the payload's is joined to it (gen_determinism
// checks every frame against proto::build_frame's).
uint32_t icrc_in_place(uint8_t* ip, bool v4, uint8_t* udp, uint8_t* bth, const uint8_t* payload,
                       std::size_t payload_len, std::size_t pad, const PayloadCrcs& crcs) {
    uint8_t* const lrh = ip - 8;
    uint8_t saved_lrh[8], saved_ip[4], saved_ip7_8;
    std::memcpy(saved_lrh, lrh, 8);
    std::memset(lrh, 0xFF, 8);
    if (v4) {
        // TOS, TTL, header checksum.
        saved_ip[0] = ip[1], saved_ip[1] = ip[8], saved_ip[2] = ip[10], saved_ip[3] = ip[11];
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF;
    } else {
        // Traffic class (low nibble of byte 0, high nibble of byte 1), flow label, hop limit.
        std::memcpy(saved_ip, ip, 4);
        saved_ip7_8 = ip[7];
        ip[0] |= 0x0F;
        ip[1] = ip[2] = ip[3] = ip[7] = 0xFF;
    }
    const uint8_t saved_udp6 = udp[6], saved_udp7 = udp[7], saved_bth4 = bth[4];
    udp[6] = udp[7] = 0xFF;  // UDP checksum
    bth[4] = 0xFF;           // FECN, BECN, resv6
    const uint32_t headers = proto::crc32_ieee(0, lrh, static_cast<std::size_t>(payload - lrh));
    std::memcpy(lrh, saved_lrh, 8);
    if (v4) {
        ip[1] = saved_ip[0], ip[8] = saved_ip[1], ip[10] = saved_ip[2], ip[11] = saved_ip[3];
    } else {
        std::memcpy(ip, saved_ip, 4);
        ip[7] = saved_ip7_8;
    }
    udp[6] = saved_udp6, udp[7] = saved_udp7;
    bth[4] = saved_bth4;
    static constexpr uint8_t kZeros[3] = {0, 0, 0};
    const uint32_t rest = proto::crc32_ieee(crcs.pattern[payload_len], kZeros, pad);
    return proto::crc32_join(headers, rest, crcs.factor[payload_len + pad]);
}

}  // namespace

// The frame proto::build_frame writes for this packet, written directly: build_frame
// fills a FrameSpec, then parses its own frame to find the ICRC's offsets, which cost
// more than writing the headers (callgrind: ~500 instructions per frame). Here the
// offsets are known as the headers are written.
std::size_t FrameEncoder::encode_roce_direct(const SimPacket& p, uint8_t* out) {
    const proto::OpcodeInfo& info = proto::opcode_info(p.t.bth.opcode);
    const HostSpec& src = sc_.hosts[p.src_host];
    const HostSpec& dst = sc_.hosts[p.dst_host];
    const bool v4 = src.ip.is_v4();
    const std::size_t vlans = src.vlans.size();
    const std::size_t udp_len = proto::kUdpHeaderLen + proto::kBthLen + info.ext_len +
                                p.payload_len + p.t.bth.pad + proto::kIcrcLen;
    const std::size_t l3_len = v4 ? proto::kIpv4MinHeaderLen : proto::kIpv6HeaderLen;
    const std::size_t l3 = proto::kEthHeaderLen + vlans * proto::kVlanTagLen;
    const std::size_t total = l3 + l3_len + udp_len;
    if (!info.valid || vlans > proto::kMaxVlanTags || udp_len > 0xFFFF || total > kMaxFrameBytes)
        return 0;
    const uint16_t ipv4_id = ipv4_id_[p.src_host]++;  // counted for IPv6 hosts too

    const proto::MacAddress smac = host_mac(nic_of(p)), dmac = host_mac(p.dst_host);
    std::memcpy(out, dmac.data(), 6);
    std::memcpy(out + 6, smac.data(), 6);
    uint8_t* h = out + 12;
    for (std::size_t i = 0; i < vlans; ++i) {
        // Two tags: 802.1ad outer, 802.1Q inner.
        store_be16(h, vlans == 2 && i == 0 ? proto::kEtherTypeQinQ : proto::kEtherTypeVlan);
        store_be16(h + 2, static_cast<uint16_t>((kRocePcp << 13) | (src.vlans[i] & 0x0FFF)));
        h += proto::kVlanTagLen;
    }
    store_be16(h, v4 ? proto::kEtherTypeIpv4 : proto::kEtherTypeIpv6);

    uint8_t* ip = out + l3;
    const uint8_t tos = static_cast<uint8_t>((p.dscp << 2) | (p.ecn & 3));
    constexpr uint8_t kTtl = 64;
    if (v4) {
        ip[0] = 0x45;
        ip[1] = tos;
        store_be16(ip + 2, static_cast<uint16_t>(l3_len + udp_len));
        store_be16(ip + 4, ipv4_id);
        store_be16(ip + 6, 0x4000);  // DF
        ip[8] = kTtl;
        ip[9] = proto::kIpProtoUdp;
        std::memcpy(ip + 12, &src.ip.bytes[12], 4);
        std::memcpy(ip + 16, &dst.ip.bytes[12], 4);
        fix_ipv4_checksum(ip);
    } else {
        const uint32_t flow_label = (uint32_t{p.sport} * 2654435761u) & 0xFFFFF;
        store_be32(ip, (6u << 28) | (uint32_t{tos} << 20) | flow_label);
        store_be16(ip + 4, static_cast<uint16_t>(udp_len));
        ip[6] = proto::kIpProtoUdp;
        ip[7] = kTtl;
        std::memcpy(ip + 8, src.ip.bytes.data(), 16);
        std::memcpy(ip + 24, dst.ip.bytes.data(), 16);
    }

    uint8_t* udp = ip + l3_len;
    store_be16(udp, p.sport);
    store_be16(udp + 2, proto::kRoceV2Port);
    store_be16(udp + 4, static_cast<uint16_t>(udp_len));
    store_be16(udp + 6, 0);

    const proto::Bth& b = p.t.bth;
    uint8_t* bth = udp + proto::kUdpHeaderLen;
    bth[0] = b.opcode;
    bth[1] = static_cast<uint8_t>((b.se ? 0x80 : 0) | (b.migreq ? 0x40 : 0) | ((b.pad & 3) << 4) |
                                  (b.tver & 0x0F));
    store_be16(bth + 2, b.pkey);
    bth[4] = static_cast<uint8_t>((b.fecn ? 0x80 : 0) | (b.becn ? 0x40 : 0));
    proto::store_be24(bth + 5, b.dest_qp);
    bth[8] = b.ack_req ? 0x80 : 0;
    proto::store_be24(bth + 9, b.psn);
    h = write_ext_headers(bth + proto::kBthLen, p.t, info.ext);
    uint8_t* const payload = h;
    std::memcpy(h, payload_pattern().data(), p.payload_len);
    h += p.payload_len;
    std::memset(h, 0, b.pad);
    h += b.pad;

    const uint32_t icrc =
        icrc_in_place(out + l3, v4, udp, bth, payload, p.payload_len, b.pad, payload_crcs_);
    h[0] = static_cast<uint8_t>(icrc);  // little-endian on the wire
    h[1] = static_cast<uint8_t>(icrc >> 8);
    h[2] = static_cast<uint8_t>(icrc >> 16);
    h[3] = static_cast<uint8_t>(icrc >> 24);
    if (!v4) fix_ipv6_udp_checksum(src, out);
    return total;
}

std::size_t FrameEncoder::encode_roce_with_builder(const SimPacket& p, uint8_t* out) {
    const HostSpec& src = sc_.hosts[p.src_host];
    const HostSpec& dst = sc_.hosts[p.dst_host];
    proto::FrameSpec spec;
    spec.src_mac = host_mac(nic_of(p));
    spec.dst_mac = host_mac(p.dst_host);
    spec.vlan_count = static_cast<uint8_t>(src.vlans.size());
    for (std::size_t i = 0; i < src.vlans.size(); ++i) {
        // Two tags: 802.1ad outer, 802.1Q inner.
        spec.vlan_tpid[i] =
            src.vlans.size() == 2 && i == 0 ? proto::kEtherTypeQinQ : proto::kEtherTypeVlan;
        spec.vlan_tci[i] = static_cast<uint16_t>((kRocePcp << 13) | (src.vlans[i] & 0x0FFF));
    }
    spec.src_ip = src.ip;
    spec.dst_ip = dst.ip;
    spec.dscp = p.dscp;
    spec.ecn = p.ecn;
    spec.ipv4_id = ipv4_id_[p.src_host]++;
    spec.flow_label = (uint32_t{p.sport} * 2654435761u) & 0xFFFFF;
    spec.src_port = p.sport;
    spec.t = p.t;
    spec.payload_len = p.payload_len;
    spec.payload = payload_pattern().data();
    std::array<uint8_t, kMadBytes> mad;
    if (p.cm != CmKind::none) {
        const ConnInfo& ci = sim_.conns()[p.conn];
        CmMadFields f;
        f.kind = p.cm;
        f.local_comm_id = p.cm_local_id;
        f.remote_comm_id = p.cm_remote_id;
        f.local_qpn = p.cm_qpn;
        f.starting_psn = p.cm_psn;
        f.path_mtu = ci.spec.mtu;
        f.local_ip = src.ip;
        f.remote_ip = dst.ip;
        write_cm_mad(f, mad);
        spec.payload = mad.data();
        spec.payload_len = kMadBytes;
    }
    const std::size_t n = proto::build_frame(spec, {out, kMaxFrameBytes});
    if (n && !src.ip.is_v4()) fix_ipv6_udp_checksum(src, out);
    return n;
}

// IPv6 forbids a zero UDP checksum (RFC 8200 8.1; Wireshark flags it), so IPv6 RoCE
// senders such as Soft-RoCE fill it in. The ICRC masks this field, so setting it after
// the ICRC leaves the ICRC valid.
void FrameEncoder::fix_ipv6_udp_checksum(const HostSpec& src, uint8_t* out) const {
    {
        uint8_t* ip6 = out + proto::kEthHeaderLen + src.vlans.size() * proto::kVlanTagLen;
        uint8_t* udp = ip6 + proto::kIpv6HeaderLen;
        const uint16_t udp_len = proto::load_be16(udp + 4);
        uint32_t sum = 0;
        for (int i = 0; i < 32; i += 2) sum += proto::load_be16(ip6 + 8 + i);  // addresses
        sum += udp_len;
        sum += proto::kIpProtoUdp;
        for (uint32_t i = 0; i + 1 < udp_len; i += 2) sum += proto::load_be16(udp + i);
        if (udp_len & 1) sum += uint32_t{udp[udp_len - 1]} << 8;
        while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
        const uint16_t csum = static_cast<uint16_t>(~sum);
        store_be16(udp + 6, csum == 0 ? 0xFFFF : csum);
    }
}

std::size_t FrameEncoder::write_l2(uint16_t host, uint16_t dst_host, uint16_t ether_type,
                                   uint8_t* out) const {
    const proto::MacAddress s = host_mac(host), d = host_mac(dst_host);
    std::memcpy(out, d.data(), 6);
    std::memcpy(out + 6, s.data(), 6);
    store_be16(out + 12, ether_type);
    return proto::kEthHeaderLen;
}

std::size_t FrameEncoder::encode_background(const SimPacket& p, uint8_t* out) {
    std::memset(out, 0, 128 + p.payload_len);
    const uint32_t src = 0xC0A80000u | p.src_host, dst = 0xC0A80000u | p.dst_host;  // 192.168/16
    const uint16_t id = ipv4_id_[p.src_host]++;
    switch (static_cast<BackgroundKind>(p.variant)) {
        case BackgroundKind::arp: {
            std::size_t off = write_l2(p.src_host, p.dst_host, kEtherTypeArp, out);
            std::memset(out, 0xFF, 6);  // broadcast who-has
            uint8_t* a = out + off;
            store_be16(a, 1);
            store_be16(a + 2, proto::kEtherTypeIpv4);
            a[4] = 6;
            a[5] = 4;
            store_be16(a + 6, 1);
            const proto::MacAddress m = host_mac(p.src_host);
            std::memcpy(a + 8, m.data(), 6);
            store_be32(a + 14, src);
            store_be32(a + 24, dst);
            return kMinFrame;
        }
        case BackgroundKind::tcp: {
            const std::size_t off = write_l2(p.src_host, p.dst_host, proto::kEtherTypeIpv4, out);
            uint8_t* tcp = out + off + proto::kIpv4MinHeaderLen;
            store_be16(tcp, p.sport);
            store_be16(tcp + 2, 443);
            store_be32(tcp + 4, p.t.bth.psn);
            tcp[12] = 5 << 4;
            tcp[13] = 0x02;  // SYN
            store_be16(tcp + 14, 64240);
            write_ipv4(out + off, kIpProtoTcp, 40, id, 0x4000, src, dst);
            return std::max<std::size_t>(off + 40, kMinFrame);
        }
        case BackgroundKind::udp_other_port:
        case BackgroundKind::udp_from_4791:
        case BackgroundKind::ipv4_fragment: {
            const std::size_t off = write_l2(p.src_host, p.dst_host, proto::kEtherTypeIpv4, out);
            const auto kind = static_cast<BackgroundKind>(p.variant);
            uint8_t* udp = out + off + proto::kIpv4MinHeaderLen;
            const uint16_t sport =
                kind == BackgroundKind::udp_from_4791 ? proto::kRoceV2Port : p.sport;
            const uint16_t dport = kind == BackgroundKind::udp_from_4791   ? 40000
                                   : kind == BackgroundKind::ipv4_fragment ? proto::kRoceV2Port
                                                                           : 9000;
            const uint32_t payload = p.payload_len;
            store_be16(udp, sport);
            store_be16(udp + 2, dport);
            // A first fragment announces the whole datagram's UDP length.
            store_be16(udp + 4,
                       static_cast<uint16_t>(8 + payload +
                                             (kind == BackgroundKind::ipv4_fragment ? 1000 : 0)));
            for (uint32_t i = 0; i < payload; ++i) udp[8 + i] = static_cast<uint8_t>(i * 13 + 5);
            const uint16_t frag =
                kind == BackgroundKind::ipv4_fragment ? 0x2000 : 0x4000;  // MF : DF
            write_ipv4(out + off, proto::kIpProtoUdp, static_cast<uint16_t>(20 + 8 + payload), id,
                       frag, src, dst);
            return std::max<std::size_t>(off + 28 + payload, kMinFrame);
        }
    }
    return 0;
}

// A well-formed WRITE Only between the two hosts, then broken the way SPEC 1 names.
std::size_t FrameEncoder::encode_malformed(const SimPacket& p, uint8_t* out) {
    SimPacket base = p;
    base.cls = PacketClass::roce;
    base.t.bth.pad = proto::pad_for(base.payload_len);
    base.t.reth = {0x1000, 0xABCD, base.payload_len};
    const std::size_t n = encode_roce(base, out);
    if (n == 0) return 0;
    const HostSpec& src = sc_.hosts[p.src_host];
    const bool v4 = src.ip.is_v4();
    uint8_t* ip = out + proto::kEthHeaderLen + src.vlans.size() * proto::kVlanTagLen;
    const std::size_t l3 = v4 ? proto::kIpv4MinHeaderLen : proto::kIpv6HeaderLen;
    uint8_t* udp = ip + l3;
    // Rewrites the IP and UDP lengths for a UDP datagram of `udp_len` bytes and cuts the frame.
    auto shrink = [&](uint16_t udp_len) {
        store_be16(udp + 4, udp_len);
        if (v4) {
            store_be16(ip + 2, static_cast<uint16_t>(l3 + udp_len));
            fix_ipv4_checksum(ip);
        } else {
            store_be16(ip + 4, udp_len);
        }
        const std::size_t len = static_cast<std::size_t>(udp - out) + udp_len;
        if (len < kMinFrame) std::memset(out + len, 0, kMinFrame - len);  // Ethernet padding
        return std::max(len, kMinFrame);
    };
    switch (static_cast<MalformedKind>(p.variant)) {
        case MalformedKind::length_mismatch:
            store_be16(udp + 4, static_cast<uint16_t>(proto::load_be16(udp + 4) + 4));
            return n;
        case MalformedKind::truncated_short:
            return shrink(proto::kUdpHeaderLen + 8);  // 8 B of a 12 B BTH
        case MalformedKind::reserved_opcode:
            udp[proto::kUdpHeaderLen] = 0x15;  // the hole in the RC opcode range
            return n;
        case MalformedKind::truncated_headers:
            return shrink(proto::kUdpHeaderLen + proto::kBthLen + 8);  // half a RETH
    }
    return n;
}

}  // namespace insert::gen
