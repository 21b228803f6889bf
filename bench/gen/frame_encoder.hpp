// Turns a SimPacket into Ethernet frame bytes: RoCE packets through the shared
// proto::build_frame (with ICRC), CM MADs as their payload, and the non-RoCE and
// malformed frames of SPEC 1 by mutating or hand-writing headers.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "bench/gen/scenario.hpp"
#include "bench/gen/simulator.hpp"

namespace insert::gen {

constexpr std::size_t kMaxFrameBytes = 9216;

struct PayloadCrcs;

class FrameEncoder {
  public:
    FrameEncoder(const Scenario& scenario, const Simulator& sim);
    // Encodes into an internal buffer valid until the next call; empty span on failure.
    std::span<const uint8_t> encode(const SimPacket& p) {
        return {buf_.data(), encode_into(p, buf_.data())};
    }
    // Encodes into `out` (room for kMaxFrameBytes); the frame's length, 0 on failure.
    std::size_t encode_into(const SimPacket& p, uint8_t* out);
    // A RoCE packet through proto::build_frame: the reference the direct writer used by
    // encode_into() must equal byte for byte (gen_determinism checks every scenario).
    std::size_t encode_roce_with_builder(const SimPacket& p, uint8_t* out);

  private:
    std::size_t encode_roce(const SimPacket& p, uint8_t* out);
    std::size_t encode_roce_direct(const SimPacket& p, uint8_t* out);
    void fix_ipv6_udp_checksum(const HostSpec& src, uint8_t* out) const;
    std::size_t encode_background(const SimPacket& p, uint8_t* out);
    std::size_t encode_malformed(const SimPacket& p, uint8_t* out);
    std::size_t write_l2(uint16_t host, uint16_t dst_host, uint16_t ether_type, uint8_t* out) const;

    const Scenario& sc_;
    const Simulator& sim_;
    std::vector<uint16_t> ipv4_id_;  // per sending host
    const PayloadCrcs& payload_crcs_;
    std::array<uint8_t, kMaxFrameBytes> buf_{};
};

}  // namespace insert::gen
