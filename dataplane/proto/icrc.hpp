// RoCEv2 Invariant CRC (IBTA annex A17.3.3): CRC-32 (the Ethernet polynomial) over
// 8 bytes of 0xFF standing in for the LRH, then the IP header, UDP header and BTH with
// their variant fields masked to all ones, then the rest of the packet up to the ICRC.
// Masked: IPv4 TOS, TTL, header checksum; IPv6 traffic class, flow label, hop limit;
// UDP checksum; BTH byte 4 (FECN, BECN, reserved). Carried little-endian on the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/proto/parser.hpp"

namespace insert::proto {

// CRC-32 as zlib's crc32() computes it (reflected, polynomial 0x04C11DB7, complemented):
// `crc` is the value returned for the data before (0 to start). Uses carry-less
// multiplication where the CPU has it; the _portable variant never does (for tests).
uint32_t crc32_ieee(uint32_t crc, const uint8_t* data, std::size_t len) noexcept;
uint32_t crc32_ieee_portable(uint32_t crc, const uint8_t* data, std::size_t len) noexcept;

// CRC-32 of A followed by B from the CRCs of both (as zlib's crc32_combine): `factor` is
// crc32_length_factor(length of B), which callers combining many B's of the same few
// lengths compute once per length. About 10 ns where CRC-ing B again costs ~0.2 ns a byte:
// the generator's frames carry the same payload bytes for a given length, so it CRCs only
// the headers and combines them with the payload's precomputed CRC.
uint32_t crc32_length_factor(std::size_t len) noexcept;
// out[n] = crc32_length_factor(n) for every n < out.size(), one table step each.
void crc32_length_factors(std::span<uint32_t> out) noexcept;
uint32_t crc32_join(uint32_t crc_a, uint32_t crc_b, uint32_t factor) noexcept;
// The same without carry-less multiplication (for tests).
uint32_t crc32_join_portable(uint32_t crc_a, uint32_t crc_b, uint32_t factor) noexcept;

// `p` must be the parse of `frame` with verdict `roce`.
uint32_t compute_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept;
uint32_t wire_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept;
inline bool verify_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept {
    return compute_icrc(frame, p) == wire_icrc(frame, p);
}

}  // namespace insert::proto
