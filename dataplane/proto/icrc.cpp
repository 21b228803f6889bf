#include "dataplane/proto/icrc.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>

namespace insert::proto {

namespace {

uint32_t crc_update(uint32_t crc, const uint8_t* data, std::size_t len) {
    return static_cast<uint32_t>(crc32(crc, data, static_cast<uInt>(len)));
}

// Feeds `len` bytes starting at `data` with the bytes at `offsets` replaced by 0xFF.
template <std::size_t N>
uint32_t crc_masked(uint32_t crc, const uint8_t* data, std::size_t len,
                    const std::array<uint8_t, N>& offsets) {
    uint8_t chunk[64];
    std::size_t done = 0;
    while (done < len) {
        const std::size_t n = std::min(len - done, sizeof(chunk));
        std::memcpy(chunk, data + done, n);
        for (uint8_t off : offsets)
            if (off >= done && off < done + n) chunk[off - done] = 0xFF;
        crc = crc_update(crc, chunk, n);
        done += n;
    }
    return crc;
}

constexpr std::array<uint8_t, 4> kIpv4Masked = {1, 8, 10, 11};  // TOS, TTL, checksum
// IPv6 bytes 1-3 (rest of the traffic class, flow label) and 7 (hop limit), counted
// from byte 1 because byte 0's low nibble is masked separately.
constexpr std::array<uint8_t, 4> kIpv6MaskedFromByte1 = {0, 1, 2, 6};
constexpr std::array<uint8_t, 2> kUdpMasked = {6, 7};  // checksum
constexpr std::array<uint8_t, 1> kBthMasked = {4};     // FECN, BECN, resv6

}  // namespace

uint32_t compute_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept {
    static constexpr uint8_t kLrhStandIn[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    const uint8_t* f = frame.data();
    uint32_t crc = crc_update(0, kLrhStandIn, sizeof(kLrhStandIn));
    const std::size_t ip_len = p.l4_offset - p.l3_offset;
    if (p.ipv6) {
        // Traffic class spans the low nibble of byte 0 and the high nibble of byte 1.
        uint8_t first = static_cast<uint8_t>(f[p.l3_offset] | 0x0F);
        crc = crc_update(crc, &first, 1);
        crc = crc_masked(crc, f + p.l3_offset + 1, ip_len - 1, kIpv6MaskedFromByte1);
    } else {
        crc = crc_masked(crc, f + p.l3_offset, ip_len, kIpv4Masked);
    }
    crc = crc_masked(crc, f + p.l4_offset, 8, kUdpMasked);
    crc = crc_masked(crc, f + p.bth_offset, kBthLen, kBthMasked);
    const std::size_t rest = p.icrc_offset - (p.bth_offset + kBthLen);
    return crc_update(crc, f + p.bth_offset + kBthLen, rest);
}

uint32_t wire_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept {
    const uint8_t* q = frame.data() + p.icrc_offset;
    return uint32_t{q[0]} | (uint32_t{q[1]} << 8) | (uint32_t{q[2]} << 16) | (uint32_t{q[3]} << 24);
}

}  // namespace insert::proto
