// Bounds-checked, zero-copy, allocation-free RoCEv2 parser (SPEC.md section 1).
// Never reads outside the given span, whatever the bytes say.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/headers.hpp"
#include "dataplane/proto/ip_address.hpp"

namespace insert::proto {

enum class Verdict : uint8_t { non_roce, roce, malformed };

// ParsedPacket::port of a frame that came from no port (a capture file, memory): DPDK's
// RTE_MBUF_PORT_INVALID, which such mbufs carry.
constexpr uint16_t kNoPort = 0xFFFF;

enum class Malformed : uint8_t {
    none,
    length_mismatch,  // IP total length beyond the frame, or UDP length != IP payload length
    truncated,        // UDP payload < 12 B, or headers+pad+ICRC longer than the UDP payload
    reserved_opcode,  // BTH opcode not defined for RoCEv2
};
constexpr std::size_t kMalformedReasons = 4;  // including `none`
std::string_view malformed_name(Malformed m);

struct ParsedPacket {
    Verdict verdict = Verdict::non_roce;
    Malformed malformed = Malformed::none;
    bool ipv6 = false;
    uint8_t vlan_count = 0;
    uint8_t ecn = 0;  // IP ECN bits: 3 = CE
    uint8_t dscp = 0;
    uint16_t vlan_tci[2] = {0, 0};
    // The port the frame arrived on (set by the worker, not by parse_frame: the frame does
    // not say), kNoPort for frames read from a file.
    uint16_t port = kNoPort;
    IpAddress src_ip;
    IpAddress dst_ip;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint16_t l3_offset = 0;   // IP header
    uint16_t l4_offset = 0;   // UDP header
    uint16_t bth_offset = 0;  // BTH
    uint32_t udp_len = 0;     // UDP length field
    uint32_t payload_offset = 0;
    int32_t payload_len = 0;   // SPEC: UDP len - 8 - 12 - ext - PadCnt - 4
    uint32_t icrc_offset = 0;  // position of the 4-byte ICRC in the frame
    TransportHeaders t;
    const uint8_t* frame = nullptr;  // the parsed bytes (valid while the caller keeps them)
    uint32_t frame_len = 0;

    const OpcodeInfo& info() const { return opcode_info(t.bth.opcode); }
};

// Parses one Ethernet frame. On `roce` every field is valid; on `malformed` the reason is
// set and the fields decoded so far are valid (IPs, ports); on `non_roce` nothing is.
Verdict parse_frame(std::span<const uint8_t> frame, ParsedPacket& out) noexcept;

// False only for frames parse_frame() would call non_roce, decided from at most three
// header fields without the call: the EtherType (ARP, LLDP, ...), an untagged IPv4
// protocol other than UDP (TCP), or an untagged option-less IPv4/UDP datagram to another
// port. The live workers skip the parser for these (non-RoCE traffic on an inline link is
// most of what crosses it); anything else, IPv6 and tagged frames included, is parsed.
inline bool may_be_roce(std::span<const uint8_t> frame) noexcept {
    const uint8_t* p = frame.data();
    const std::size_t len = frame.size();
    if (len < kEthHeaderLen) return false;
    const uint16_t type = static_cast<uint16_t>(p[12] << 8 | p[13]);
    if (type != kEtherTypeIpv4)
        return type == kEtherTypeIpv6 || type == kEtherTypeVlan || type == kEtherTypeQinQ;
    if (len < kEthHeaderLen + kIpv4MinHeaderLen) return false;  // parse_ipv4: too short
    const uint8_t* ip = p + kEthHeaderLen;
    if (ip[9] != kIpProtoUdp) return false;  // parse_ipv4 checks the protocol byte alone
    // Version 4, 20-byte header: the UDP destination port is at a fixed place.
    if (ip[0] != 0x45 || len < kEthHeaderLen + kIpv4MinHeaderLen + kUdpHeaderLen) return true;
    return static_cast<uint16_t>(ip[22] << 8 | ip[23]) == kRoceV2Port;
}

}  // namespace insert::proto
