// Parser behaviour: every opcode's header layout, encapsulations (VLAN, IPv4 options, IPv6
// extension headers), what is not RoCE, and the malformed reasons in SPEC.md's order.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"
#include "tests/dataplane/proto/frame_helpers.hpp"

namespace insert::proto {
namespace {

using testing::build;
using testing::ip;

constexpr std::size_t kL3 = 14;            // untagged IPv4: IP header
constexpr std::size_t kL4 = 14 + 20;       // UDP header
constexpr std::size_t kBth = 14 + 20 + 8;  // BTH

// What IBTA vol.1 ch.9 puts after the BTH, written out per opcode independently of the
// opcode table under test: bytes of extension headers, and which of them are present.
struct Expected {
    bool valid = false;
    std::size_t ext_bytes = 0;
    bool xrc = false, deth = false, reth = false, atomic = false, aeth = false, atomic_ack = false,
         imm = false, ieth = false, cnp = false;
};

Expected expected_layout(unsigned opcode) {
    Expected e;
    const unsigned low = opcode & 0x1F;
    const unsigned family = opcode & 0xE0;
    const bool rc_like = (family == 0x00 && (low <= 0x14 || low == 0x16 || low == 0x17)) ||
                         (family == 0xA0 && (low <= 0x14 || low == 0x16 || low == 0x17)) ||
                         (family == 0x20 && low <= 0x0B);
    if (rc_like) {
        e.valid = true;
        switch (low) {
            case 0x03:
            case 0x05:
            case 0x09:
                e.imm = true;
                break;
            case 0x06:
            case 0x0A:
            case 0x0C:
                e.reth = true;
                break;
            case 0x0B:
                e.reth = e.imm = true;
                break;
            case 0x0D:
            case 0x0F:
            case 0x10:
            case 0x11:
                e.aeth = true;
                break;
            case 0x12:
                e.aeth = e.atomic_ack = true;
                break;
            case 0x13:
            case 0x14:
                e.atomic = true;
                break;
            case 0x16:
            case 0x17:
                e.ieth = true;
                break;
            default:
                break;
        }
        const bool response = low >= 0x0D && low <= 0x12;
        e.xrc = family == 0xA0 && !response;
    } else if (opcode == 0x64 || opcode == 0x65) {
        e.valid = true;
        e.deth = true;
        e.imm = opcode == 0x65;
    } else if (opcode == 0x81) {
        e.valid = true;
        e.cnp = true;
    }
    e.ext_bytes = (e.xrc ? 4 : 0) + (e.deth ? 8 : 0) + (e.reth ? 16 : 0) + (e.atomic ? 28 : 0) +
                  (e.aeth ? 4 : 0) + (e.atomic_ack ? 8 : 0) + (e.imm ? 4 : 0) + (e.ieth ? 4 : 0) +
                  (e.cnp ? 16 : 0);
    return e;
}

FrameSpec distinctive_spec(uint8_t opcode, uint32_t payload_len) {
    FrameSpec s;
    s.src_ip = ip("10.1.2.3");
    s.dst_ip = ip("10.4.5.6");
    s.src_port = 61000;
    TransportHeaders& t = s.t;
    t.bth.opcode = opcode;
    t.bth.se = true;
    t.bth.migreq = true;
    t.bth.pkey = 0x8123;
    t.bth.fecn = true;
    t.bth.becn = false;
    t.bth.dest_qp = 0xA1B2C3;
    t.bth.ack_req = true;
    t.bth.psn = 0xF0E0D0;
    t.xrc_srqn = 0x0BCDEF;
    t.deth = {0x11223344, 0x556677};
    t.reth = {0x0102030405060708ull, 0x090A0B0C, 0x0D0E0F10};
    t.atomic = {0x1112131415161718ull, 0x191A1B1C, 0x2122232425262728ull, 0x3132333435363738ull};
    t.aeth = {0x61, 0xABCDEF};
    t.atomic_ack = 0x4142434445464748ull;
    t.imm = 0x51525354;
    t.ieth_rkey = 0x61626364;
    s.payload_len = payload_len;
    t.bth.pad = pad_for(payload_len);
    return s;
}

TEST(Parser, every_defined_opcode_round_trips_with_its_header_layout) {
    int defined = 0;
    for (unsigned o = 0; o < 256; ++o) {
        const auto opcode = static_cast<uint8_t>(o);
        const Expected e = expected_layout(o);
        EXPECT_EQ(opcode_info(opcode).valid, e.valid) << "opcode " << o;
        if (!e.valid) continue;
        ++defined;
        const uint32_t payload = (e.cnp || e.aeth || e.atomic || o == 0x0C || (o & 0x1F) == 0x0C)
                                     ? 0
                                     : 37;  // odd length: pad 3
        const FrameSpec spec = distinctive_spec(opcode, payload);
        const std::vector<uint8_t> f = build(spec);
        ASSERT_EQ(f.size(), kBth + 12 + e.ext_bytes + payload + spec.t.bth.pad + 4) << o;
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f, p), Verdict::roce) << "opcode " << o;
        EXPECT_EQ(p.malformed, Malformed::none);
        const Bth& b = p.t.bth;
        EXPECT_EQ(b.opcode, opcode);
        EXPECT_TRUE(b.se);
        EXPECT_TRUE(b.migreq);
        EXPECT_EQ(b.pad, spec.t.bth.pad);
        EXPECT_EQ(b.tver, 0);
        EXPECT_EQ(b.pkey, 0x8123);
        EXPECT_TRUE(b.fecn);
        EXPECT_FALSE(b.becn);
        EXPECT_EQ(b.dest_qp, 0xA1B2C3u);
        EXPECT_TRUE(b.ack_req);
        EXPECT_EQ(b.psn, 0xF0E0D0u);
        EXPECT_EQ(p.src_ip, ip("10.1.2.3"));
        EXPECT_EQ(p.dst_ip, ip("10.4.5.6"));
        EXPECT_EQ(p.src_port, 61000);
        EXPECT_EQ(p.dst_port, 4791);
        EXPECT_EQ(p.l3_offset, kL3);
        EXPECT_EQ(p.l4_offset, kL4);
        EXPECT_EQ(p.bth_offset, kBth);
        EXPECT_EQ(p.udp_len, 8 + 12 + e.ext_bytes + payload + spec.t.bth.pad + 4);
        EXPECT_EQ(p.payload_offset, kBth + 12 + e.ext_bytes) << "opcode " << o;
        EXPECT_EQ(p.payload_len, static_cast<int32_t>(payload)) << "opcode " << o;
        EXPECT_EQ(p.icrc_offset, f.size() - 4);

        const TransportHeaders& t = p.t;
        EXPECT_EQ(t.has(kXrcEth), e.xrc) << o;
        EXPECT_EQ(t.has(kDeth), e.deth) << o;
        EXPECT_EQ(t.has(kReth), e.reth) << o;
        EXPECT_EQ(t.has(kAtomicEth), e.atomic) << o;
        EXPECT_EQ(t.has(kAeth), e.aeth) << o;
        EXPECT_EQ(t.has(kAtomicAckEth), e.atomic_ack) << o;
        EXPECT_EQ(t.has(kImmDt), e.imm) << o;
        EXPECT_EQ(t.has(kIeth), e.ieth) << o;
        EXPECT_EQ(t.has(kCnpPad), e.cnp) << o;
        if (e.xrc) {
            EXPECT_EQ(t.xrc_srqn, 0x0BCDEFu);
        }
        if (e.deth) {
            EXPECT_EQ(t.deth.qkey, 0x11223344u);
            EXPECT_EQ(t.deth.src_qp, 0x556677u);
        }
        if (e.reth) {
            EXPECT_EQ(t.reth.va, 0x0102030405060708ull);
            EXPECT_EQ(t.reth.rkey, 0x090A0B0Cu);
            EXPECT_EQ(t.reth.dma_len, 0x0D0E0F10u);
        }
        if (e.atomic) {
            EXPECT_EQ(t.atomic.va, 0x1112131415161718ull);
            EXPECT_EQ(t.atomic.rkey, 0x191A1B1Cu);
            EXPECT_EQ(t.atomic.swap_add, 0x2122232425262728ull);
            EXPECT_EQ(t.atomic.compare, 0x3132333435363738ull);
        }
        if (e.aeth) {
            EXPECT_EQ(t.aeth.syndrome, 0x61);
            EXPECT_EQ(t.aeth.msn, 0xABCDEFu);
        }
        if (e.atomic_ack) {
            EXPECT_EQ(t.atomic_ack, 0x4142434445464748ull);
        }
        if (e.imm) {
            EXPECT_EQ(t.imm, 0x51525354u);
        }
        if (e.ieth) {
            EXPECT_EQ(t.ieth_rkey, 0x61626364u);
        }
        // The payload really starts where the parser says: the builder's pattern.
        if (payload > 0) {
            EXPECT_EQ(f[p.payload_offset], 1);
            EXPECT_EQ(f[p.payload_offset + 1], 8);
        }
    }
    // RC 23 + UC 12 + UD 2 + CNP 1 + XRC 23.
    EXPECT_EQ(defined, 61);
}

// A frame written byte by byte from the IBTA layout, not by the builder: RDMA WRITE Only
// (0x0A) with RETH, 4 payload bytes, untagged IPv4.
TEST(Parser, hand_written_write_only_decodes_every_field) {
    const std::vector<uint8_t> f = {
        0x02, 0,    0,    0,    0,    0x02, 0x02, 0,    0,    0,    0,    0x01,
        0x08, 0x00,                                                              // Ethernet
        0x45, 0x6B, 0x00, 0x40, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00,  // IPv4
        192,  168,  0,    1,    192,  168,  0,    2,                             //
        0xC0, 0x01, 0x12, 0xB7, 0x00, 0x2C, 0x00, 0x00,                          // UDP len 44
        0x0A, 0x40, 0xFF, 0xFF, 0x40, 0x00, 0x01, 0x23, 0x80, 0x00, 0x10, 0x00,  // BTH
        0x00, 0x00, 0x7F, 0x00, 0x12, 0x34, 0x56, 0x78,                          // RETH VA
        0xAB, 0xCD, 0xEF, 0x01, 0x00, 0x00, 0x00, 0x04,                          // rkey, len
        'd',  'a',  't',  'a',                                                   // payload
        0x11, 0x22, 0x33, 0x44,                                                  // ICRC
    };
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    EXPECT_EQ(p.src_ip.to_string(), "192.168.0.1");
    EXPECT_EQ(p.dst_ip.to_string(), "192.168.0.2");
    EXPECT_EQ(p.src_port, 0xC001);
    EXPECT_EQ(p.dscp, 26);
    EXPECT_EQ(p.ecn, 3);
    EXPECT_EQ(p.t.bth.opcode, 0x0A);
    EXPECT_FALSE(p.t.bth.se);
    EXPECT_TRUE(p.t.bth.migreq);
    EXPECT_EQ(p.t.bth.pad, 0);
    EXPECT_EQ(p.t.bth.pkey, 0xFFFF);
    EXPECT_FALSE(p.t.bth.fecn);
    EXPECT_TRUE(p.t.bth.becn);
    EXPECT_EQ(p.t.bth.dest_qp, 0x000123u);
    EXPECT_TRUE(p.t.bth.ack_req);
    EXPECT_EQ(p.t.bth.psn, 0x001000u);
    EXPECT_EQ(p.t.reth.va, 0x00007F0012345678ull);
    EXPECT_EQ(p.t.reth.rkey, 0xABCDEF01u);
    EXPECT_EQ(p.t.reth.dma_len, 4u);
    EXPECT_EQ(p.payload_offset, 70u);
    EXPECT_EQ(p.payload_len, 4);
    EXPECT_EQ(p.icrc_offset, 74u);
    EXPECT_EQ(f[p.payload_offset], 'd');
}

// A UD SEND Only with Immediate (0x65) written byte by byte: DETH, then ImmDt.
TEST(Parser, hand_written_ud_send_with_immediate_decodes_deth_then_imm) {
    const std::vector<uint8_t> f = {
        0x02, 0,    0,    0,    0,    0x02, 0x02, 0,    0,    0,    0,    0x01,
        0x08, 0x00,                                                              // Ethernet
        0x45, 0x00, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00,  // IPv4
        10,   0,    0,    1,    10,   0,    0,    2,                             //
        0x00, 0x45, 0x12, 0xB7, 0x00, 0x28, 0x00, 0x00,                          // UDP len 40
        0x65, 0x20, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07,  // BTH pad 2
        0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,                          // DETH
        0xDE, 0xAD, 0xBE, 0xEF,                                                  // ImmDt
        'h',  'i',  0,    0,                                                     // payload+pad
        0,    0,    0,    0,                                                     // ICRC
    };
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    EXPECT_EQ(p.src_port, 69);
    EXPECT_EQ(p.t.bth.pad, 2);
    EXPECT_EQ(p.t.bth.dest_qp, 1u);
    EXPECT_EQ(p.t.bth.psn, 7u);
    EXPECT_EQ(p.t.deth.qkey, 0x80010000u);
    EXPECT_EQ(p.t.deth.src_qp, 1u);
    EXPECT_EQ(p.t.imm, 0xDEADBEEFu);
    EXPECT_EQ(p.payload_offset, 66u);
    EXPECT_EQ(p.payload_len, 2);
}

TEST(Parser, vlan_tags_of_both_tpids_shift_the_headers) {
    for (uint8_t tags = 0; tags <= 2; ++tags)
        for (uint16_t outer : {kEtherTypeVlan, kEtherTypeQinQ}) {
            FrameSpec s = distinctive_spec(op::kSendOnly, 10);
            s.vlan_count = tags;
            s.vlan_tpid[0] = outer;
            s.vlan_tci[0] = 0xA064;
            s.vlan_tci[1] = 0x0FFE;
            const std::vector<uint8_t> f = build(s);
            ParsedPacket p;
            ASSERT_EQ(parse_frame(f, p), Verdict::roce) << int{tags};
            EXPECT_EQ(p.vlan_count, tags);
            EXPECT_EQ(p.l3_offset, kL3 + 4u * tags);
            EXPECT_EQ(p.bth_offset, kBth + 4u * tags);
            EXPECT_EQ(p.payload_len, 10);
            EXPECT_EQ(p.t.bth.psn, 0xF0E0D0u);
            if (tags >= 1) {
                EXPECT_EQ(p.vlan_tci[0], 0xA064);
            }
            if (tags == 2) {
                EXPECT_EQ(p.vlan_tci[1], 0x0FFE);
            }
        }
}

TEST(Parser, three_vlan_tags_are_not_roce) {
    FrameSpec s = distinctive_spec(op::kSendOnly, 10);
    s.vlan_count = 2;
    std::vector<uint8_t> f = build(s);
    const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x07};
    f.insert(f.begin() + 12, tag, tag + 4);
    ParsedPacket p;
    EXPECT_EQ(parse_frame(f, p), Verdict::non_roce);
}

TEST(Parser, ipv4_options_move_udp_and_bth) {
    for (unsigned words : {1u, 3u, 10u}) {
        std::vector<uint8_t> f = build(distinctive_spec(op::kWriteFirst, 64));
        testing::add_ipv4_options(f, kL3, words);
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f, p), Verdict::roce) << words;
        EXPECT_EQ(p.l4_offset, kL4 + 4 * words);
        EXPECT_EQ(p.bth_offset, kBth + 4 * words);
        EXPECT_EQ(p.t.reth.dma_len, 0x0D0E0F10u);
        EXPECT_EQ(p.payload_len, 64);
        EXPECT_TRUE(verify_icrc(f, p));
    }
}

TEST(Parser, ipv6_with_extension_headers_is_roce) {
    for (uint8_t ext : {kIpv6HopByHop, kIpv6DestOptions, kIpv6Routing, kIpv6Fragment}) {
        FrameSpec s = distinctive_spec(op::kSendOnlyImm, 21);
        s.src_ip = ip("fd00::a");
        s.dst_ip = ip("2001:db8::b");
        s.dscp = 10;
        s.ecn = 3;
        std::vector<uint8_t> f = build(s);
        testing::add_ipv6_extension(f, kL3, ext);  // a fragment header: offset 0, M 0
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f, p), Verdict::roce) << int{ext};
        EXPECT_TRUE(p.ipv6);
        EXPECT_EQ(p.src_ip.to_string(), "fd00::a");
        EXPECT_EQ(p.dst_ip.to_string(), "2001:db8::b");
        EXPECT_EQ(p.dscp, 10);
        EXPECT_EQ(p.ecn, 3);
        EXPECT_EQ(p.l4_offset, kL3 + 40 + 8);
        EXPECT_EQ(p.t.imm, 0x51525354u);
        EXPECT_EQ(p.payload_len, 21);
    }
}

TEST(Parser, ipv6_fragment_and_unknown_next_header_are_not_roce) {
    FrameSpec s = distinctive_spec(op::kSendOnly, 8);
    s.src_ip = ip("fd00::a");
    s.dst_ip = ip("fd00::b");
    std::vector<uint8_t> frag = build(s);
    testing::add_ipv6_extension(frag, kL3, kIpv6Fragment);
    frag[kL3 + 40 + 3] = 0x01;  // M: more fragments follow
    ParsedPacket p;
    EXPECT_EQ(parse_frame(frag, p), Verdict::non_roce);
    std::vector<uint8_t> later = build(s);
    testing::add_ipv6_extension(later, kL3, kIpv6Fragment);
    later[kL3 + 40 + 2] = 0x01;  // offset 32: a later fragment
    EXPECT_EQ(parse_frame(later, p), Verdict::non_roce);
    std::vector<uint8_t> nonext = build(s);
    nonext[kL3 + 6] = 59;  // No Next Header
    EXPECT_EQ(parse_frame(nonext, p), Verdict::non_roce);
}

TEST(Parser, ipv4_fragments_are_not_roce) {
    std::vector<uint8_t> first = build(distinctive_spec(op::kSendOnly, 8));
    first[kL3 + 6] = 0x20;  // MF
    ParsedPacket p;
    EXPECT_EQ(parse_frame(first, p), Verdict::non_roce);
    std::vector<uint8_t> later = build(distinctive_spec(op::kSendOnly, 8));
    later[kL3 + 6] = 0x00;
    later[kL3 + 7] = 0x10;  // offset 16 * 8
    EXPECT_EQ(parse_frame(later, p), Verdict::non_roce);
}

TEST(Parser, roce_is_decided_by_destination_port_only) {
    ParsedPacket p;
    for (uint16_t sport : {69, 53, 123, 4791, 0, 65535}) {
        FrameSpec s = distinctive_spec(op::kAck, 0);
        s.src_port = sport;
        ASSERT_EQ(parse_frame(build(s), p), Verdict::roce) << sport;
        EXPECT_EQ(p.src_port, sport);
    }
    FrameSpec other = distinctive_spec(op::kAck, 0);
    other.dst_port = 4790;
    EXPECT_EQ(parse_frame(build(other), p), Verdict::non_roce);
    other.src_port = 4791;
    EXPECT_EQ(parse_frame(build(other), p), Verdict::non_roce);
}

TEST(Parser, non_udp_and_non_ip_frames_are_not_roce) {
    ParsedPacket p;
    std::vector<uint8_t> tcp = build(distinctive_spec(op::kSendOnly, 8));
    tcp[kL3 + 9] = 6;
    EXPECT_EQ(parse_frame(tcp, p), Verdict::non_roce);
    std::vector<uint8_t> arp = build(distinctive_spec(op::kSendOnly, 8));
    arp[12] = 0x08;
    arp[13] = 0x06;
    EXPECT_EQ(parse_frame(arp, p), Verdict::non_roce);
    std::vector<uint8_t> v6_in_v4_type = build(distinctive_spec(op::kSendOnly, 8));
    v6_in_v4_type[kL3] = 0x65;  // version 6 in an IPv4 EtherType
    EXPECT_EQ(parse_frame(v6_in_v4_type, p), Verdict::non_roce);
    EXPECT_EQ(parse_frame(std::span<const uint8_t>(), p), Verdict::non_roce);
}

TEST(MayBeRoce, rejects_only_frames_the_parser_calls_non_roce) {
    std::vector<uint8_t> roce = build(distinctive_spec(op::kSendOnly, 8));
    EXPECT_TRUE(may_be_roce(roce));
    std::vector<uint8_t> arp = roce;
    arp[12] = 0x08;
    arp[13] = 0x06;
    EXPECT_FALSE(may_be_roce(arp));
    EXPECT_FALSE(may_be_roce(std::vector<uint8_t>(64, 0)));  // what net_null receives
    std::vector<uint8_t> tcp = roce;
    tcp[kL3 + 9] = 6;
    EXPECT_FALSE(may_be_roce(tcp));
    std::vector<uint8_t> dns = roce;
    dns[kL4 + 2] = 0;
    dns[kL4 + 3] = 53;
    EXPECT_FALSE(may_be_roce(dns));
    EXPECT_FALSE(may_be_roce(std::span<const uint8_t>(roce.data(), 13)));
    // Everything the three fields cannot settle goes to the parser.
    std::vector<uint8_t> options = roce;
    testing::add_ipv4_options(options, kL3, 2);
    EXPECT_TRUE(may_be_roce(options));
    FrameSpec tagged = distinctive_spec(op::kSendOnly, 8);
    tagged.vlan_count = 1;
    EXPECT_TRUE(may_be_roce(build(tagged)));
    FrameSpec v6 = distinctive_spec(op::kSendOnly, 8);
    v6.src_ip = ip("fd00::1");
    v6.dst_ip = ip("fd00::2");
    EXPECT_TRUE(may_be_roce(build(v6)));
    for (const auto& f : {arp, tcp, dns}) {
        ParsedPacket p;
        EXPECT_EQ(parse_frame(f, p), Verdict::non_roce);
    }
}

TEST(MayBeRoce, agrees_with_the_parser_on_every_prefix_and_header_byte_value) {
    // Each byte the filter reads, and the bytes around them, set to every value, on every
    // length of the frame: a `false` must always be the parser's non_roce.
    const std::vector<uint8_t> base = build(distinctive_spec(op::kWriteOnly, 16));
    std::size_t rejected = 0;
    for (std::size_t at : {12u, 13u, 14u, 15u, 20u, 21u, 23u, 34u, 35u, 36u, 37u}) {
        for (unsigned v = 0; v < 256; ++v) {
            std::vector<uint8_t> f = base;
            f[at] = static_cast<uint8_t>(v);
            for (std::size_t n : {std::size_t{0}, std::size_t{13}, std::size_t{14}, std::size_t{33},
                                  std::size_t{34}, std::size_t{41}, std::size_t{42}, f.size()}) {
                const std::span<const uint8_t> frame(f.data(), n);
                ParsedPacket p;
                const Verdict verdict = parse_frame(frame, p);
                if (!may_be_roce(frame)) {
                    ++rejected;
                    ASSERT_EQ(verdict, Verdict::non_roce)
                        << "byte " << at << " = " << v << ", " << n;
                }
            }
        }
    }
    EXPECT_GT(rejected, 10000u);  // the filter does reject most of these
}

// Everything parse_frame reports, but for the offsets a VLAN tag moves by 4 bytes.
std::string decoded(Verdict v, const ParsedPacket& p, std::size_t shift) {
    const TransportHeaders& t = p.t;
    const Bth& b = t.bth;
    std::string s = std::to_string(static_cast<int>(v)) + " " +
                    std::string(malformed_name(p.malformed)) + " " + p.src_ip.to_string() + " " +
                    p.dst_ip.to_string() + " " + std::to_string(p.src_port) + " " +
                    std::to_string(p.dscp) + " " + std::to_string(p.ecn);
    if (v == Verdict::non_roce) return s;
    s += " udp " + std::to_string(p.udp_len);
    if (p.malformed == Malformed::length_mismatch ||
        (p.malformed == Malformed::truncated && p.udp_len < kUdpHeaderLen + kBthLen))
        return s;
    for (const uint32_t x : {uint32_t{b.opcode}, uint32_t{b.se}, uint32_t{b.migreq},
                             uint32_t{b.pad}, uint32_t{b.tver}, uint32_t{b.pkey}, uint32_t{b.fecn},
                             uint32_t{b.becn}, b.dest_qp, uint32_t{b.ack_req}, b.psn})
        s += " " + std::to_string(x);
    if (v != Verdict::roce) return s;
    s += " " + std::to_string(p.payload_offset - shift) + " " + std::to_string(p.payload_len) +
         " " + std::to_string(p.icrc_offset - shift) + " ext " + std::to_string(t.ext);
    if (t.ext & kReth)
        s += " reth " + std::to_string(t.reth.va) + " " + std::to_string(t.reth.dma_len);
    if (t.ext & kAeth)
        s += " aeth " + std::to_string(t.aeth.syndrome) + " " + std::to_string(t.aeth.msn);
    if (t.ext & kImmDt) s += " imm " + std::to_string(t.imm);
    if (t.ext & kIeth) s += " ieth " + std::to_string(t.ieth_rkey);
    if (t.ext & kDeth) s += " deth " + std::to_string(t.deth.src_qp);
    return s;
}

TEST(Parser, untagged_ipv4_fast_path_decides_as_the_general_path) {
    // Untagged IPv4 frames take a fast path with fixed offsets; the same frame with a VLAN
    // tag takes the general one. Every header byte of IP and UDP, and the BTH's first,
    // set to values that matter (and some that do not), on frames of every opcode family
    // and cut at lengths around the headers: both paths must report the same.
    std::size_t compared = 0, roce = 0, malformed = 0;
    for (const uint8_t opcode : {op::kWriteOnly, op::kSendMiddle, op::kAck, op::kUdSendOnlyImm,
                                 op::kReadRequest, op::kCnp}) {
        const FrameSpec plain = distinctive_spec(opcode, opcode == op::kCnp ? 0 : 16);
        FrameSpec spec_tagged = plain;
        spec_tagged.vlan_count = 1;
        spec_tagged.vlan_tci[0] = 0x0123;
        const std::vector<uint8_t> base = build(plain);
        const std::vector<uint8_t> base_tagged = build(spec_tagged);
        for (std::size_t at = kL3; at <= kBth; ++at) {
            for (const unsigned v : {0x00u, 0x01u, 0x06u, 0x11u, 0x12u, 0x14u, 0x20u, 0x40u, 0x45u,
                                     0x46u, 0x55u, 0x7Fu, 0x80u, 0xB7u, 0xFFu}) {
                std::vector<uint8_t> f = base;
                std::vector<uint8_t> g = base_tagged;
                f[at] = g[at + kVlanTagLen] = static_cast<uint8_t>(v);
                for (const std::size_t n :
                     {f.size(), f.size() - 1, std::size_t{kBth + 12}, std::size_t{kBth + 11},
                      std::size_t{kL4 + 8}, std::size_t{kL4 + 7}, std::size_t{kL4}}) {
                    ParsedPacket p, q;
                    const Verdict a = parse_frame({f.data(), n}, p);
                    const Verdict b = parse_frame({g.data(), n + kVlanTagLen}, q);
                    ASSERT_EQ(decoded(a, p, 0), decoded(b, q, kVlanTagLen))
                        << "opcode " << unsigned{opcode} << " byte " << at << " = " << v
                        << " length " << n;
                    ++compared;
                    roce += a == Verdict::roce;
                    malformed += a == Verdict::malformed;
                }
            }
        }
    }
    EXPECT_GT(roce, 1000u);  // both outcomes were exercised, not only rejections
    EXPECT_GT(malformed, 1000u);
    EXPECT_GT(compared, roce + malformed);
}

TEST(Parser, ethernet_padding_after_the_datagram_is_ignored) {
    std::vector<uint8_t> f = build(distinctive_spec(op::kAck, 0));
    const std::size_t datagram_end = f.size();
    f.insert(f.end(), 8, 0xEE);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    EXPECT_EQ(p.payload_len, 0);
    EXPECT_EQ(p.icrc_offset, datagram_end - 4);
}

TEST(Parser, cnp_carries_sixteen_reserved_bytes_and_no_payload) {
    FrameSpec s = distinctive_spec(op::kCnp, 0);
    const std::vector<uint8_t> f = build(s);
    EXPECT_EQ(f.size(), kBth + 12 + 16 + 4);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::roce);
    EXPECT_EQ(p.payload_len, 0);
    EXPECT_EQ(p.info().transport, Transport::cnp);
}

// --- Malformed reasons (SPEC.md section 1) ---

std::vector<uint8_t> good_frame() {
    return build(distinctive_spec(op::kSendOnly, 16));
}

void set_udp_len(std::vector<uint8_t>& f, uint16_t v) {
    store_be16(&f[kL4 + 4], v);
}
void set_ip_total(std::vector<uint8_t>& f, uint16_t v) {
    store_be16(&f[kL3 + 2], v);
}

Malformed malformed_reason(const std::vector<uint8_t>& f) {
    ParsedPacket p;
    const Verdict v = parse_frame(f, p);
    EXPECT_EQ(v, Verdict::malformed);
    return p.malformed;
}

TEST(Malformed, ip_total_length_beyond_the_frame_is_length_mismatch) {
    std::vector<uint8_t> f = good_frame();
    set_ip_total(f, static_cast<uint16_t>(f.size() - kL3 + 1));
    EXPECT_EQ(malformed_reason(f), Malformed::length_mismatch);
}

TEST(Malformed, udp_length_other_than_ip_payload_is_length_mismatch) {
    std::vector<uint8_t> longer = good_frame();
    set_udp_len(longer, static_cast<uint16_t>(load_be16(&longer[kL4 + 4]) + 4));
    EXPECT_EQ(malformed_reason(longer), Malformed::length_mismatch);
    std::vector<uint8_t> shorter = good_frame();
    set_udp_len(shorter, static_cast<uint16_t>(load_be16(&shorter[kL4 + 4]) - 4));
    EXPECT_EQ(malformed_reason(shorter), Malformed::length_mismatch);
}

TEST(Malformed, ipv6_payload_length_beyond_the_frame_is_length_mismatch) {
    FrameSpec s = distinctive_spec(op::kSendOnly, 16);
    s.src_ip = ip("fd00::1");
    s.dst_ip = ip("fd00::2");
    std::vector<uint8_t> f = build(s);
    store_be16(&f[kL3 + 4], static_cast<uint16_t>(load_be16(&f[kL3 + 4]) + 2));
    EXPECT_EQ(malformed_reason(f), Malformed::length_mismatch);
}

TEST(Malformed, a_frame_cut_by_the_snap_length_is_length_mismatch) {
    std::vector<uint8_t> f = good_frame();
    f.resize(kL4 + 8 + 4);  // headers seen, the rest of the datagram not captured
    EXPECT_EQ(malformed_reason(f), Malformed::length_mismatch);
}

TEST(Malformed, udp_payload_shorter_than_a_bth_is_truncated) {
    for (uint16_t udp_payload : {0, 1, 11}) {
        std::vector<uint8_t> f = good_frame();
        f.resize(kL4 + 8 + udp_payload);
        set_udp_len(f, static_cast<uint16_t>(8 + udp_payload));
        set_ip_total(f, static_cast<uint16_t>(20 + 8 + udp_payload));
        EXPECT_EQ(malformed_reason(f), Malformed::truncated) << udp_payload;
    }
}

TEST(Malformed, every_reserved_opcode_is_reserved_opcode) {
    int reserved = 0;
    for (unsigned o = 0; o < 256; ++o) {
        if (expected_layout(o).valid) continue;
        ++reserved;
        std::vector<uint8_t> f = good_frame();
        f[kBth] = static_cast<uint8_t>(o);
        EXPECT_EQ(malformed_reason(f), Malformed::reserved_opcode) << "opcode " << o;
    }
    EXPECT_EQ(reserved, 256 - 61);
}

TEST(Malformed, headers_pad_and_icrc_longer_than_the_udp_payload_is_truncated) {
    // A SEND Only with no payload and a PadCnt of 3: payload_len = -3.
    FrameSpec s = distinctive_spec(op::kSendOnly, 0);
    std::vector<uint8_t> pad = build(s);
    pad[kBth + 1] |= 0x30;
    EXPECT_EQ(malformed_reason(pad), Malformed::truncated);
    // An opcode that needs a RETH in a UDP payload with room for the BTH and ICRC only.
    std::vector<uint8_t> reth = build(distinctive_spec(op::kSendOnly, 0));
    reth[kBth] = op::kWriteOnly;
    EXPECT_EQ(malformed_reason(reth), Malformed::truncated);
    // Exactly enough room is well-formed with an empty payload.
    std::vector<uint8_t> exact = build(distinctive_spec(op::kWriteOnly, 0));
    ParsedPacket p;
    EXPECT_EQ(parse_frame(exact, p), Verdict::roce);
    EXPECT_EQ(p.payload_len, 0);
}

// SPEC order: length_mismatch, then truncated (< 12 B), then reserved_opcode, then
// truncated (negative payload). Each frame below has two defects; the first one wins.
TEST(Malformed, length_mismatch_is_reported_before_truncated) {
    std::vector<uint8_t> f = good_frame();
    f.resize(kL4 + 8 + 5);
    set_udp_len(f, 8 + 5);
    set_ip_total(f, 20 + 8 + 6);  // disagrees with UDP, and beyond the frame
    EXPECT_EQ(malformed_reason(f), Malformed::length_mismatch);
}

TEST(Malformed, length_mismatch_is_reported_before_reserved_opcode) {
    std::vector<uint8_t> f = good_frame();
    f[kBth] = 0x15;
    set_udp_len(f, static_cast<uint16_t>(load_be16(&f[kL4 + 4]) + 1));
    EXPECT_EQ(malformed_reason(f), Malformed::length_mismatch);
}

TEST(Malformed, short_udp_payload_is_truncated_before_its_opcode_is_read) {
    std::vector<uint8_t> f = good_frame();
    f[kBth] = 0xFF;  // a reserved opcode byte inside an 11-byte UDP payload
    f.resize(kL4 + 8 + 11);
    set_udp_len(f, 8 + 11);
    set_ip_total(f, 20 + 8 + 11);
    EXPECT_EQ(malformed_reason(f), Malformed::truncated);
}

TEST(Malformed, reserved_opcode_is_reported_before_negative_payload) {
    std::vector<uint8_t> f = build(distinctive_spec(op::kSendOnly, 0));
    f[kBth] = 0x40;       // reserved (RD)
    f[kBth + 1] |= 0x30;  // and a pad that would make payload_len negative
    EXPECT_EQ(malformed_reason(f), Malformed::reserved_opcode);
}

TEST(Malformed, malformed_packets_keep_addresses_and_ports) {
    std::vector<uint8_t> f = good_frame();
    f[kBth] = 0x1C;
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f, p), Verdict::malformed);
    EXPECT_EQ(p.src_ip, ip("10.1.2.3"));
    EXPECT_EQ(p.dst_ip, ip("10.4.5.6"));
    EXPECT_EQ(p.src_port, 61000);
    EXPECT_EQ(malformed_name(p.malformed), "reserved_opcode");
}

TEST(Parser, a_reused_result_does_not_keep_headers_of_the_previous_packet) {
    ParsedPacket p;
    ASSERT_EQ(parse_frame(build(distinctive_spec(op::kWriteOnlyImm, 4)), p), Verdict::roce);
    ASSERT_EQ(parse_frame(build(distinctive_spec(op::kSendOnly, 4)), p), Verdict::roce);
    EXPECT_EQ(p.t.ext, 0);
    std::vector<uint8_t> bad = good_frame();
    bad[kBth] = 0x15;
    ASSERT_EQ(parse_frame(bad, p), Verdict::malformed);
    ASSERT_EQ(parse_frame(build(distinctive_spec(op::kSendOnly, 4)), p), Verdict::roce);
    EXPECT_EQ(p.malformed, Malformed::none);
    std::vector<uint8_t> tagged_spec_frame;
    FrameSpec tagged = distinctive_spec(op::kSendOnly, 4);
    tagged.vlan_count = 1;
    ASSERT_EQ(parse_frame(build(tagged), p), Verdict::roce);
    ASSERT_EQ(parse_frame(build(distinctive_spec(op::kSendOnly, 4)), p), Verdict::roce);
    EXPECT_EQ(p.vlan_count, 0);
}

// Every prefix of a valid frame parses without reading past it (ASan builds check the
// reads) and never claims a well-formed packet.
TEST(Parser, every_prefix_of_a_frame_is_safe_and_never_well_formed) {
    for (bool v6 : {false, true}) {
        FrameSpec s = distinctive_spec(op::kWriteOnlyImm, 9);
        s.vlan_count = 2;
        if (v6) {
            s.src_ip = ip("fd00::1");
            s.dst_ip = ip("fd00::2");
        }
        const std::vector<uint8_t> f = build(s);
        for (std::size_t n = 0; n < f.size(); ++n) {
            std::vector<uint8_t> prefix(f.begin(), f.begin() + static_cast<long>(n));
            ParsedPacket p;
            EXPECT_NE(parse_frame(prefix, p), Verdict::roce) << n;
        }
    }
}

TEST(IpAddress, ipv4_text_matches_inet_ntop_for_every_digit_count) {
    // The dotted quad is formatted by hand (the exporter's hot loop); inet_ntop is the
    // reference for octets of one, two and three digits, zeros and 255.
    const uint32_t samples[] = {0x00000000u, 0x0A000001u, 0x09631764u, 0xC0A80001u,
                                0xFFFFFFFFu, 0x640A6300u, 0x01020304u, 0xFE0B7F80u};
    for (const uint32_t v : samples) {
        const auto a = proto::IpAddress::v4(v);
        const uint32_t be = htonl(v);
        char want[INET_ADDRSTRLEN];
        ASSERT_NE(inet_ntop(AF_INET, &be, want, sizeof(want)), nullptr);
        EXPECT_EQ(a.to_string(), want);
    }
}

TEST(IpAddress, ipv4_text_matches_inet_ntop_for_every_octet_in_every_position) {
    // The formatter copies a table entry per octet: every value, at every position.
    for (unsigned octet = 0; octet < 256; ++octet) {
        for (unsigned shift = 0; shift < 32; shift += 8) {
            const uint32_t v = (0x01020304u & ~(0xFFu << shift)) | (octet << shift);
            const uint32_t be = htonl(v);
            char want[INET_ADDRSTRLEN];
            ASSERT_NE(inet_ntop(AF_INET, &be, want, sizeof(want)), nullptr);
            char got[INET6_ADDRSTRLEN];
            const std::size_t n = proto::IpAddress::v4(v).format(got);
            ASSERT_EQ(std::string(got, n), want) << octet << " << " << shift;
            ASSERT_EQ(got[n], '\0');
        }
    }
}

}  // namespace
}  // namespace insert::proto
