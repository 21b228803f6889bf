// UDP sockets that put RoCEv2 on the wire with the IP header fields the ICRC assumes.
#pragma once

#include <cstdint>
#include <string>

namespace insert::softverbs {

// DSCP 26 with ECT(0), the traffic class RoCE NICs send with.
constexpr uint8_t kRoceTos = (26 << 2) | 2;

// Opens a UDP socket bound to ipv4:port (host order). `receive` also asks for the TOS byte
// of received packets. Returns the fd, or -errno with `error` set.
int open_roce_socket(uint32_t ipv4, uint16_t port, bool receive, std::string& error);

}  // namespace insert::softverbs
