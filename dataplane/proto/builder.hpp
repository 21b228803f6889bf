// Builds RoCEv2 frames (Ethernet [+VLANs] / IPv4|IPv6 / UDP / BTH / ext headers /
// payload / pad / ICRC) for tests, pcaps and the traffic synthesizer. No allocation:
// the caller provides the output buffer.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "dataplane/proto/headers.hpp"
#include "dataplane/proto/ip_address.hpp"

namespace insert::proto {

using MacAddress = std::array<uint8_t, 6>;

struct FrameSpec {
    MacAddress dst_mac = {0x02, 0, 0, 0, 0, 0x02};
    MacAddress src_mac = {0x02, 0, 0, 0, 0, 0x01};
    uint8_t vlan_count = 0;
    uint16_t vlan_tpid[2] = {0x8100, 0x8100};  // outer first; 0x88A8 for 802.1ad
    uint16_t vlan_tci[2] = {0, 0};
    IpAddress src_ip;  // both IPv4 (::ffff:a.b.c.d) or both IPv6
    IpAddress dst_ip;
    uint8_t dscp = 26;  // the common RoCE traffic class
    uint8_t ecn = 2;    // ECT(0): RoCE NICs mark their packets ECN-capable
    uint8_t ttl = 64;
    uint16_t ipv4_id = 0;
    uint32_t flow_label = 0;
    uint16_t src_port = 49152;
    uint16_t dst_port = kRoceV2Port;
    TransportHeaders t;  // t.ext is taken from the opcode table, not from here
    uint32_t payload_len = 0;
    const uint8_t* payload = nullptr;  // null: a deterministic byte pattern
    bool corrupt_icrc = false;         // write a wrong ICRC (for negative tests)
};

// Pad count that makes the payload a multiple of 4 bytes, as IBTA requires.
constexpr uint8_t pad_for(uint32_t payload_len) {
    return static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
}

// Bytes build_frame() will write for this spec.
std::size_t frame_length(const FrameSpec& spec) noexcept;

// Writes the frame and returns its length, or 0 if `out` is too small or the opcode is
// reserved. IPv4 header checksum and ICRC are computed; UDP checksum is 0, as RoCEv2 NICs send.
std::size_t build_frame(const FrameSpec& spec, std::span<uint8_t> out) noexcept;

}  // namespace insert::proto
