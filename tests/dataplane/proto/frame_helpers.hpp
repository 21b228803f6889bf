// Frame construction helpers shared by the proto unit tests and make_sample_pcaps: the
// builder into a vector, and the variants the builder does not write itself (IPv4
// options, IPv6 extension headers), applied by editing a built frame.
#pragma once

#include <cstdint>
#include <vector>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::testing {

inline std::vector<uint8_t> build(const proto::FrameSpec& spec) {
    std::vector<uint8_t> f(proto::frame_length(spec));
    const std::size_t n = proto::build_frame(spec, f);
    f.resize(n);
    return f;
}

inline proto::IpAddress ip(const char* text) {
    return *proto::IpAddress::parse(text);
}

// Rewrites the ICRC of a well-formed RoCE frame after an edit; false if it does not parse.
inline bool refresh_icrc(std::vector<uint8_t>& f) {
    proto::ParsedPacket p;
    if (proto::parse_frame(f, p) != proto::Verdict::roce) return false;
    const uint32_t icrc = proto::compute_icrc(f, p);
    for (int i = 0; i < 4; ++i) f[p.icrc_offset + i] = static_cast<uint8_t>(icrc >> (8 * i));
    return true;
}

inline uint16_t ipv4_header_checksum(const uint8_t* h, std::size_t len) {
    uint32_t sum = 0;
    for (std::size_t i = 0; i < len; i += 2)
        if (i != 10) sum += proto::load_be16(h + i);
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

// Inserts `words` 32-bit words of IPv4 options (NOPs, then End of Options) after the
// 20-byte header at `l3`, fixing IHL, total length, header checksum and the ICRC.
inline void add_ipv4_options(std::vector<uint8_t>& f, std::size_t l3, unsigned words) {
    std::vector<uint8_t> opts(words * 4, 0x01);  // NOP
    opts.back() = 0x00;                          // End of Options List
    f.insert(f.begin() + static_cast<long>(l3 + 20), opts.begin(), opts.end());
    uint8_t* h = f.data() + l3;
    h[0] = static_cast<uint8_t>(0x40 | (5 + words));
    proto::store_be16(h + 2, static_cast<uint16_t>(proto::load_be16(h + 2) + words * 4));
    proto::store_be16(h + 10, ipv4_header_checksum(h, 20 + words * 4));
    refresh_icrc(f);
}

// Inserts one IPv6 extension header of type `type` (hop-by-hop 0, routing 43, destination
// options 60: 8 bytes with a PadN option; fragment 44: an atomic fragment, offset 0, M 0)
// directly after the fixed header at `l3`, fixing next header, payload length and ICRC.
inline void add_ipv6_extension(std::vector<uint8_t>& f, std::size_t l3, uint8_t type) {
    uint8_t* h = f.data() + l3;
    const uint8_t next = h[6];
    std::vector<uint8_t> ext(8, 0);
    ext[0] = next;
    if (type == 44) {
        ext[4] = 0x12;  // identification
        ext[7] = 0x34;
    } else if (type == 43) {
        ext[2] = 0xFD;  // routing type 253 (experimental), segments left 0: ignored
    } else {
        ext[2] = 0x01;  // PadN covering the remaining 4 bytes
        ext[3] = 0x04;
    }
    h[6] = type;
    proto::store_be16(h + 4, static_cast<uint16_t>(proto::load_be16(h + 4) + 8));
    f.insert(f.begin() + static_cast<long>(l3 + 40), ext.begin(), ext.end());
    refresh_icrc(f);
}

}  // namespace insert::testing
