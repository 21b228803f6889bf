// RoCEv2 ICRC (IBTA annex A17.3.3) on known vectors, and the builder's exact bytes.
//
// The vectors are whole frames. Their ICRCs were computed outside this code base, with
// Python's zlib.crc32 over 8 bytes of 0xFF, then the IP header, UDP header and BTH with the
// variant fields set to 0xFF, then the rest up to the ICRC (the reading in
// tests/differential/decode_vs_tshark.py); the IPv4 ones were confirmed with scapy's
// RoCE layer (scapy.contrib.roce, which recomputes the ICRC when building a packet).
// tshark 4.0 does not verify ICRCs; it prints the four wire bytes as one big-endian number
// (e.g. 0x795a7393 for kSendOnlyV4), which the differential test compares on every packet.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <iterator>
#include <random>
#include <string_view>
#include <vector>

#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "tests/dataplane/proto/frame_helpers.hpp"

namespace insert::proto {
namespace {

using testing::build;
using testing::ip;

std::vector<uint8_t> from_hex(std::string_view hex) {
    std::vector<uint8_t> out;
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<uint8_t>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
    return out;
}

constexpr uint8_t kPayload[] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

// IPv4, RC SEND Only, QP 0x11, PSN 1, AckReq, payload "0123456789abcdef".
constexpr std::string_view kSendOnlyV4 =
    "0200000000020200000000010800456a003c00004000401126450a0000010a000002c00012b7002800000400"
    "ffff000000118000000130313233343536373839616263646566795a7393";
constexpr uint32_t kSendOnlyV4Icrc = 0x93735a79;

// IPv6 with one VLAN tag, RDMA WRITE First with RETH, PSN 0xFFFFFF, 5 payload bytes + 3 pad.
constexpr std::string_view kWriteFirstV6Vlan =
    "0200000000020200000000018100006486dd66a1234500301140fd0000000000000000000000000000"
    "01fd000000000000000000000000000002c35012b7003000000630800100abcdef00ffffff00007f00"
    "deadbeef0000123400000005303132333400000094055f80";
constexpr uint32_t kWriteFirstV6VlanIcrc = 0x805f0594;

// IPv4, UD SEND Only with Immediate to QP 1 (DETH Q_Key 0x80010000), source port 4791.
constexpr std::string_view kUdSendImmV4 =
    "0200000000020200000000010800456a0040000040004011b6d4c0a8010ac0a8011412b712b7002c0000"
    "6500ffff000000010000002a8001000000000001deadbeef30313233343536373cf6889f";
constexpr uint32_t kUdSendImmV4Icrc = 0x9f88f63c;

// IPv4 CNP with BECN, DSCP 48, ECN 1.
constexpr std::string_view kCnpV4 =
    "020000000002020000000001080045c1003c00004000401125ee0a0000020a000001c73812b70028000081"
    "00ffff400000110000000000000000000000000000000000000000ea2b14d9";
constexpr uint32_t kCnpV4Icrc = 0xd9142bea;

FrameSpec send_only_v4() {
    FrameSpec s;
    s.src_ip = ip("10.0.0.1");
    s.dst_ip = ip("10.0.0.2");
    s.src_port = 49152;
    s.t.bth.opcode = op::kSendOnly;
    s.t.bth.dest_qp = 0x11;
    s.t.bth.psn = 1;
    s.t.bth.ack_req = true;
    s.payload = kPayload;
    s.payload_len = 16;
    return s;
}

FrameSpec write_first_v6_vlan() {
    FrameSpec s;
    s.src_ip = ip("fd00::1");
    s.dst_ip = ip("fd00::2");
    s.vlan_count = 1;
    s.vlan_tci[0] = 100;
    s.flow_label = 0x12345;
    s.src_port = 50000;
    s.t.bth.opcode = op::kWriteFirst;
    s.t.bth.dest_qp = 0xABCDEF;
    s.t.bth.psn = 0xFFFFFF;
    s.t.bth.pkey = 0x8001;
    s.t.reth = {0x00007f00deadbeefull, 0x1234, 5};
    s.payload = kPayload;
    s.payload_len = 5;
    s.t.bth.pad = 3;
    return s;
}

FrameSpec ud_send_imm_v4() {
    FrameSpec s;
    s.src_ip = ip("192.168.1.10");
    s.dst_ip = ip("192.168.1.20");
    s.src_port = 4791;
    s.t.bth.opcode = op::kUdSendOnlyImm;
    s.t.bth.dest_qp = 1;
    s.t.bth.psn = 42;
    s.t.deth = {0x80010000, 1};
    s.t.imm = 0xDEADBEEF;
    s.payload = kPayload;
    s.payload_len = 8;
    return s;
}

FrameSpec cnp_v4() {
    FrameSpec s;
    s.src_ip = ip("10.0.0.2");
    s.dst_ip = ip("10.0.0.1");
    s.src_port = 51000;
    s.dscp = 48;
    s.ecn = 1;
    s.t.bth.opcode = op::kCnp;
    s.t.bth.dest_qp = 0x11;
    s.t.bth.becn = true;
    return s;
}

struct Vector {
    const char* name;
    std::string_view hex;
    uint32_t icrc;
    FrameSpec (*spec)();
};

const Vector kVectors[] = {
    {"send_only_v4", kSendOnlyV4, kSendOnlyV4Icrc, send_only_v4},
    {"write_first_v6_vlan", kWriteFirstV6Vlan, kWriteFirstV6VlanIcrc, write_first_v6_vlan},
    {"ud_send_imm_v4", kUdSendImmV4, kUdSendImmV4Icrc, ud_send_imm_v4},
    {"cnp_v4", kCnpV4, kCnpV4Icrc, cnp_v4},
};

TEST(Icrc, known_vectors_compute_to_their_independent_values) {
    for (const Vector& v : kVectors) {
        const std::vector<uint8_t> f = from_hex(v.hex);
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f, p), Verdict::roce) << v.name;
        EXPECT_EQ(compute_icrc(f, p), v.icrc) << v.name;
        EXPECT_EQ(wire_icrc(f, p), v.icrc) << v.name;
        EXPECT_TRUE(verify_icrc(f, p)) << v.name;
    }
}

TEST(Icrc, builder_writes_the_known_vectors_byte_for_byte) {
    for (const Vector& v : kVectors) EXPECT_EQ(build(v.spec()), from_hex(v.hex)) << v.name;
}

TEST(Icrc, is_carried_least_significant_byte_first) {
    const std::vector<uint8_t> f = from_hex(kSendOnlyV4);
    const std::size_t at = f.size() - 4;
    EXPECT_EQ(f[at], 0x79);
    EXPECT_EQ(f[at + 1], 0x5a);
    EXPECT_EQ(f[at + 2], 0x73);
    EXPECT_EQ(f[at + 3], 0x93);
}

// The variant fields (IPv4 TOS/TTL/checksum, IPv6 traffic class/flow label/hop limit, UDP
// checksum, BTH FECN/BECN/reserved byte) may change hop by hop: the ICRC must not.
TEST(Icrc, variant_fields_do_not_change_it) {
    for (const Vector& v : kVectors) {
        std::vector<uint8_t> f = from_hex(v.hex);
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f, p), Verdict::roce);
        const uint32_t before = compute_icrc(f, p);
        const std::size_t l3 = p.l3_offset;
        if (p.ipv6) {
            f[l3] ^= 0x0F;  // traffic class high nibble
            f[l3 + 1] ^= 0xFF;
            f[l3 + 2] ^= 0x5A;
            f[l3 + 3] ^= 0xA5;
            f[l3 + 7] = 1;  // hop limit
        } else {
            f[l3 + 1] ^= 0x03;  // ECN CE marked by a switch
            f[l3 + 8] = 3;      // TTL
            f[l3 + 10] ^= 0xFF;
            f[l3 + 11] ^= 0x0F;
        }
        f[p.l4_offset + 6] = 0x12;  // UDP checksum
        f[p.l4_offset + 7] = 0x34;
        f[p.bth_offset + 4] ^= 0xFF;  // FECN, BECN, reserved
        ParsedPacket q;
        ASSERT_EQ(parse_frame(f, q), Verdict::roce);
        EXPECT_EQ(compute_icrc(f, q), before) << v.name;
    }
}

TEST(Icrc, any_invariant_byte_changes_it) {
    const std::vector<uint8_t> original = from_hex(kSendOnlyV4);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(original, p), Verdict::roce);
    const uint32_t expected = compute_icrc(original, p);
    const std::size_t masked[] = {p.l3_offset + 1u,  p.l3_offset + 8u, p.l3_offset + 10u,
                                  p.l3_offset + 11u, p.l4_offset + 6u, p.l4_offset + 7u,
                                  p.bth_offset + 4u};
    const std::size_t l3 = p.l3_offset, l4 = p.l4_offset, bth = p.bth_offset;
    for (std::size_t i = l3; i < p.icrc_offset; ++i) {
        if (std::find(std::begin(masked), std::end(masked), i) != std::end(masked)) continue;
        // Only bytes that keep the frame parseable with the same offsets can be flipped.
        if (i == l3 || i == l3 + 2 || i == l3 + 3 || i == l3 + 6 || i == l3 + 7 || i == l3 + 9)
            continue;                             // version/IHL, length, flags, protocol
        if (i >= l4 + 2 && i < l4 + 6) continue;  // port 4791, UDP length
        if (i == bth || i == bth + 1) continue;   // opcode, pad
        std::vector<uint8_t> f = original;
        f[i] ^= 0x01;
        ParsedPacket q;
        ASSERT_EQ(parse_frame(f, q), Verdict::roce) << i;
        EXPECT_NE(compute_icrc(f, q), expected) << "byte " << i;
    }
}

TEST(Icrc, corrupt_icrc_option_fails_verification) {
    FrameSpec s = send_only_v4();
    s.corrupt_icrc = true;
    const std::vector<uint8_t> f = build(s);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    EXPECT_FALSE(verify_icrc(f, p));
    EXPECT_EQ(compute_icrc(f, p), kSendOnlyV4Icrc);
    EXPECT_EQ(wire_icrc(f, p), ~kSendOnlyV4Icrc);
}

TEST(Icrc, every_builder_frame_verifies) {
    for (unsigned o = 0; o < 256; ++o) {
        if (!opcode_info(static_cast<uint8_t>(o)).valid) continue;
        for (bool v6 : {false, true}) {
            FrameSpec s;
            s.src_ip = ip(v6 ? "fd00::1" : "10.0.0.1");
            s.dst_ip = ip(v6 ? "fd00::2" : "10.0.0.2");
            s.vlan_count = v6 ? 2 : 1;
            s.t.bth.opcode = static_cast<uint8_t>(o);
            s.payload_len = 7;
            s.t.bth.pad = 1;
            const std::vector<uint8_t> f = build(s);
            ParsedPacket p;
            ASSERT_EQ(parse_frame(f, p), Verdict::roce) << o;
            EXPECT_TRUE(verify_icrc(f, p)) << o;
        }
    }
}

// crc32_ieee (carry-less multiplication where the CPU has it) and the table version equal
// zlib's crc32 on every length around the 16- and 64-byte block boundaries and on frames,
// at every alignment, chained from a previous value (0-15 bytes: tables only; 16-63: one
// folded lane; 64 on: four lanes, then one).
TEST(Crc32, equals_zlib_on_random_buffers) {
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(4096 + 64);
    for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 300; ++n) lengths.push_back(n);
    for (std::size_t n : {511, 512, 513, 1023, 1024, 1500, 4095, 4096}) lengths.push_back(n);
    for (std::size_t n : lengths) {
        for (std::size_t align = 0; align < 16; align += 5) {
            const uint8_t* p = buf.data() + align;
            const uint32_t start = static_cast<uint32_t>(rng());
            const auto zlib = static_cast<uint32_t>(crc32(start, p, static_cast<uInt>(n)));
            EXPECT_EQ(crc32_ieee(start, p, n), zlib) << n << " " << align;
            EXPECT_EQ(crc32_ieee_portable(start, p, n), zlib) << n << " " << align;
            const auto zlib0 = static_cast<uint32_t>(crc32(0, p, static_cast<uInt>(n)));
            EXPECT_EQ(crc32_ieee(0, p, n), zlib0) << n;
        }
    }
}

// crc(A|B) from crc(A), crc(B) and B's length, for every split of random buffers around
// the lengths the generator combines (payloads up to 4 KB and their 0-3 pad bytes).
TEST(Crc32, combine_equals_the_crc_of_the_concatenation) {
    std::mt19937 rng(11);
    std::vector<uint8_t> buf(4200);
    for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 70; ++n) lengths.push_back(n);
    for (std::size_t n : {255, 256, 257, 1023, 1024, 1027, 4096, 4099}) lengths.push_back(n);
    std::vector<uint32_t> factors(4100);
    crc32_length_factors(factors);
    for (std::size_t len_b : lengths) {
        const uint32_t factor = crc32_length_factor(len_b);
        EXPECT_EQ(factors[len_b], factor) << len_b;
        for (std::size_t len_a : {0, 1, 13, 52, 96}) {
            const uint8_t* a = buf.data();
            const uint8_t* b = buf.data() + len_a;
            const auto whole = static_cast<uint32_t>(crc32(0, a, static_cast<uInt>(len_a + len_b)));
            const uint32_t crc_a = crc32_ieee(0, a, len_a);
            const uint32_t crc_b = crc32_ieee(0, b, len_b);
            EXPECT_EQ(crc32_join(crc_a, crc_b, factor), whole) << len_a << " " << len_b;
            EXPECT_EQ(crc32_join_portable(crc_a, crc_b, factor), whole) << len_a << " " << len_b;
        }
    }
}

// The definition, written out with zlib over a masked copy: what compute_icrc must give
// for any parse, including IPv6 extension headers (which the builder never writes).
uint32_t reference_icrc(std::vector<uint8_t> f, const ParsedPacket& p) {
    const std::size_t l3 = p.l3_offset;
    if (p.ipv6) {
        f[l3] |= 0x0F;
        f[l3 + 1] = f[l3 + 2] = f[l3 + 3] = f[l3 + 7] = 0xFF;
    } else {
        f[l3 + 1] = f[l3 + 8] = f[l3 + 10] = f[l3 + 11] = 0xFF;
    }
    f[p.l4_offset + 6] = f[p.l4_offset + 7] = 0xFF;
    f[p.bth_offset + 4] = 0xFF;
    std::vector<uint8_t> in(8, 0xFF);
    in.insert(in.end(), f.begin() + static_cast<std::ptrdiff_t>(l3),
              f.begin() + static_cast<std::ptrdiff_t>(p.icrc_offset));
    return static_cast<uint32_t>(crc32(0, in.data(), static_cast<uInt>(in.size())));
}

TEST(Icrc, equals_the_masked_definition_with_ipv6_extension_headers) {
    std::vector<uint8_t> f = from_hex(kWriteFirstV6Vlan);
    const std::size_t l3 = 18;  // Ethernet + one VLAN tag
    ASSERT_EQ(f[l3 + 6], 17);   // next header: UDP
    // Insert an 8-byte Destination Options header (next header UDP, PadN) after the
    // fixed header.
    const uint8_t dest_opts[8] = {17, 0, 1, 4, 0, 0, 0, 0};
    f.insert(f.begin() + static_cast<std::ptrdiff_t>(l3 + 40), std::begin(dest_opts),
             std::end(dest_opts));
    f[l3 + 6] = 60;
    const uint16_t plen = static_cast<uint16_t>((f[l3 + 4] << 8 | f[l3 + 5]) + 8);
    f[l3 + 4] = static_cast<uint8_t>(plen >> 8);
    f[l3 + 5] = static_cast<uint8_t>(plen);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    ASSERT_EQ(p.l4_offset, l3 + 48);
    EXPECT_EQ(compute_icrc(f, p), reference_icrc(f, p));
    for (const Vector& v : kVectors) {
        const std::vector<uint8_t> g = from_hex(v.hex);
        ASSERT_EQ(parse_frame(g, p), Verdict::roce);
        EXPECT_EQ(compute_icrc(g, p), reference_icrc(g, p)) << v.name;
    }
}

}  // namespace
}  // namespace insert::proto
