// Ethernet, IP and UDP constants shared by the parser and the builder.
#pragma once

#include <cstddef>
#include <cstdint>

namespace insert::proto {

constexpr std::size_t kEthHeaderLen = 14;
constexpr std::size_t kVlanTagLen = 4;
constexpr std::size_t kMaxVlanTags = 2;
constexpr std::size_t kIpv4MinHeaderLen = 20;
constexpr std::size_t kIpv6HeaderLen = 40;
constexpr std::size_t kUdpHeaderLen = 8;

// Where a packet's origin lies in its headers: the Ethernet source address, and the IPv4
// TTL / IPv6 hop limit (bytes from the IP header's start).
constexpr std::size_t kEthSrcMacOffset = 6;
constexpr std::size_t kMacLen = 6;
constexpr std::size_t kIpv4TtlOffset = 8;
constexpr std::size_t kIpv6HopLimitOffset = 7;

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;  // 802.1Q
constexpr uint16_t kEtherTypeQinQ = 0x88A8;  // 802.1ad

constexpr uint8_t kIpProtoUdp = 17;
constexpr uint8_t kIpv6HopByHop = 0, kIpv6Routing = 43, kIpv6Fragment = 44, kIpv6DestOptions = 60,
                  kIpv6Auth = 51;

constexpr uint8_t kEcnCe = 3;

}  // namespace insert::proto
