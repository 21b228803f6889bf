// make-sample-pcaps OUTDIR: writes the bundled captures of pcaps/ with the packet builder.
// Deterministic (fixed timestamps, fixed payload patterns): running it again reproduces
// the committed files byte for byte, which the `sample_pcaps_are_reproducible` test checks.
// pcaps/README.md describes each file.
#include <cstdio>
#include <string>
#include <vector>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "tests/dataplane/capture/capture_bytes.hpp"
#include "tests/dataplane/proto/frame_helpers.hpp"

namespace {

using insert::proto::FrameSpec;
using insert::testing::build;
using insert::testing::CapturedFrame;
using insert::testing::ip;
namespace op = insert::proto::op;
namespace proto = insert::proto;

constexpr uint64_t kEpochNs = 1'767'225'600'000'000'000ull;  // 2026-01-01T00:00:00Z

class Trace {
  public:
    void add(std::vector<uint8_t> bytes, uint64_t gap_ns = 2'000, uint32_t orig_len = 0) {
        now_ += gap_ns;
        frames_.push_back({now_, std::move(bytes), orig_len});
    }
    void add(const FrameSpec& s, uint64_t gap_ns = 2'000) { add(build(s), gap_ns); }
    const std::vector<CapturedFrame>& frames() const { return frames_; }

  private:
    uint64_t now_ = kEpochNs;
    std::vector<CapturedFrame> frames_;
};

FrameSpec v4_spec(const char* src, const char* dst) {
    FrameSpec s;
    s.src_ip = ip(src);
    s.dst_ip = ip(dst);
    return s;
}

// One RoCE packet of the RC conversation between A and B.
struct Conversation {
    FrameSpec a_to_b;
    FrameSpec b_to_a;

    FrameSpec req(uint8_t opcode, uint32_t psn, uint32_t payload, bool ack_req = false) const {
        FrameSpec s = a_to_b;
        s.t.bth.opcode = opcode;
        s.t.bth.psn = psn;
        s.t.bth.ack_req = ack_req;
        s.payload_len = payload;
        s.t.bth.pad = proto::pad_for(payload);
        return s;
    }
    FrameSpec resp(uint8_t opcode, uint32_t psn, uint32_t msn, uint32_t payload = 0) const {
        FrameSpec s = b_to_a;
        s.t.bth.opcode = opcode;
        s.t.bth.psn = psn;
        s.t.aeth.syndrome = proto::aeth_ack(0x1F);
        s.t.aeth.msn = msn;
        s.payload_len = payload;
        s.t.bth.pad = proto::pad_for(payload);
        return s;
    }
};

// A Communication Management MAD (IBTA vol.1 ch.12) sent as a UD SEND to QP 1.
FrameSpec cm_mad(const char* src, const char* dst, uint16_t attribute, uint32_t local_comm_id,
                 uint32_t remote_comm_id, uint32_t local_qpn, uint32_t start_psn,
                 std::vector<uint8_t>& mad_storage) {
    mad_storage.assign(256, 0);
    uint8_t* m = mad_storage.data();
    m[0] = 1;                                                        // base version
    m[1] = 0x07;                                                     // management class: CM
    m[2] = 2;                                                        // class version
    m[3] = 0x03;                                                     // method: Send
    proto::store_be64(m + 8, 0x0000'1234'0000'0000ull | attribute);  // transaction id
    proto::store_be16(m + 16, attribute);
    proto::store_be32(m + 24, local_comm_id);
    if (attribute == 0x0010) {                                // REQ
        proto::store_be64(m + 32, 0x0000'0106'0000'4791ull);  // service id (RDMA IP CM)
        proto::store_be64(m + 40, 0x0002'c903'00a1'b2c3ull);  // local CA GUID
        proto::store_be32(m + 52, 0);                         // local Q_Key
        proto::store_be24(m + 56, local_qpn);
        m[59] = 16;  // responder resources
        proto::store_be24(m + 64, start_psn);
        m[67] = 0x7F;  // local CM response timeout, transport RC, end-to-end flow control
        proto::store_be16(m + 68, 0xFFFF);  // partition key
        m[70] = 0x37;                       // path MTU 1024, RDC exists, RNR retry 7
    } else if (attribute == 0x0013) {       // REP
        proto::store_be32(m + 28, remote_comm_id);
        proto::store_be24(m + 36, local_qpn);
        proto::store_be24(m + 44, start_psn);
        m[48] = 16;  // responder resources
        m[49] = 16;  // initiator depth
    } else {         // RTU / DREQ / DREP
        proto::store_be32(m + 28, remote_comm_id);
    }
    FrameSpec s = v4_spec(src, dst);
    s.t.bth.opcode = op::kUdSendOnly;
    s.t.bth.dest_qp = 1;
    s.t.bth.psn = local_comm_id & 0xFFFFFF;
    s.t.deth.qkey = 0x80010000;  // the well-known GSI Q_Key
    s.t.deth.src_qp = 1;
    s.payload = m;
    s.payload_len = 256;
    return s;
}

// pcaps/rc_mixed.pcap: connection set-up over CM, then one RC connection with WRITEs,
// SENDs (with immediate and invalidate), two READs with their responses, ACKs and one
// FETCH_ADD answered by an ATOMIC ACK. PMTU 1024.
std::vector<CapturedFrame> rc_mixed() {
    Trace tr;
    std::vector<uint8_t> mad;
    constexpr uint32_t kQpA = 0x0119, kQpB = 0x011A;
    tr.add(cm_mad("10.0.0.1", "10.0.0.2", 0x0010, 0x3c1a7e01, 0, kQpA, 1000, mad), 0);
    tr.add(cm_mad("10.0.0.2", "10.0.0.1", 0x0013, 0x5d2b8f02, 0x3c1a7e01, kQpB, 500, mad), 48'000);
    tr.add(cm_mad("10.0.0.1", "10.0.0.2", 0x0014, 0x3c1a7e01, 0x5d2b8f02, 0, 0, mad), 21'000);

    Conversation c;
    c.a_to_b = v4_spec("10.0.0.1", "10.0.0.2");
    c.a_to_b.src_port = 56238;
    c.a_to_b.t.bth.dest_qp = kQpB;
    c.b_to_a = v4_spec("10.0.0.2", "10.0.0.1");
    c.b_to_a.src_port = 56238;
    c.b_to_a.t.bth.dest_qp = kQpA;

    // RDMA WRITE of 3000 bytes: First / Middle / Last.
    FrameSpec w = c.req(op::kWriteFirst, 1000, 1024);
    w.t.reth = {0x7f3a'1200'0000ull, 0x1f2e, 3000};
    tr.add(w, 30'000);
    tr.add(c.req(op::kWriteMiddle, 1001, 1024), 900);
    tr.add(c.req(op::kWriteLast, 1002, 952, true), 900);
    tr.add(c.resp(op::kAck, 1002, 1), 4'200);

    // SEND Only (64 B), then a two-packet SEND with immediate data.
    tr.add(c.req(op::kSendOnly, 1003, 64, true), 11'000);
    tr.add(c.resp(op::kAck, 1003, 2), 3'900);
    tr.add(c.req(op::kSendFirst, 1004, 1024), 9'000);
    FrameSpec si = c.req(op::kSendLastImm, 1005, 100, true);
    si.t.imm = 0xCAFE0001;
    si.t.bth.se = true;
    tr.add(si, 900);
    tr.add(c.resp(op::kAck, 1005, 3), 4'100);

    // RDMA READ of 2500 bytes: the request takes PSNs 1006..1008 for its three responses.
    FrameSpec rd = c.req(op::kReadRequest, 1006, 0, true);
    rd.t.reth = {0x7f3a'1300'0000ull, 0x2a3b, 2500};
    tr.add(rd, 12'000);
    tr.add(c.resp(op::kReadResponseFirst, 1006, 4, 1024), 5'600);
    tr.add(c.resp(op::kReadResponseMiddle, 1007, 4, 1024), 900);
    tr.add(c.resp(op::kReadResponseLast, 1008, 4, 452), 900);

    // RDMA WRITE Only with immediate (130 B: two pad bytes).
    FrameSpec wi = c.req(op::kWriteOnlyImm, 1009, 130, true);
    wi.t.reth = {0x7f3a'1200'1000ull, 0x1f2e, 130};
    wi.t.imm = 0x00000007;
    tr.add(wi, 8'000);
    tr.add(c.resp(op::kAck, 1009, 5), 4'000);

    // FETCH_ADD on a 64-bit counter, answered by an ATOMIC ACK with the original value.
    FrameSpec fa = c.req(op::kFetchAdd, 1010, 0, true);
    fa.t.atomic = {0x7f3a'1400'0008ull, 0x3c4d, 1, 0};
    tr.add(fa, 7'000);
    FrameSpec aa = c.resp(op::kAtomicAck, 1010, 6);
    aa.t.atomic_ack = 41;
    tr.add(aa, 5'200);

    // A one-packet READ, and a SEND with invalidate.
    FrameSpec rd2 = c.req(op::kReadRequest, 1011, 0, true);
    rd2.t.reth = {0x7f3a'1300'4000ull, 0x2a3b, 512};
    tr.add(rd2, 9'000);
    tr.add(c.resp(op::kReadResponseOnly, 1011, 7, 512), 4'800);
    FrameSpec sinv = c.req(op::kSendOnlyInv, 1012, 32, true);
    sinv.t.ieth_rkey = 0x2a3b;
    tr.add(sinv, 10'000);
    tr.add(c.resp(op::kAck, 1012, 8), 3'800);
    return tr.frames();
}

// Fills every header of `s` for `opcode` with distinctive values that vary with `i`, so
// that a decoder swapping or misplacing a field disagrees with Wireshark.
void vary_fields(FrameSpec& s, uint8_t opcode, unsigned i) {
    const proto::OpcodeInfo& info = proto::opcode_info(opcode);
    proto::TransportHeaders& t = s.t;
    t.bth.opcode = opcode;
    t.bth.se = (i % 3) == 1;
    t.bth.migreq = (i % 5) == 2;
    t.bth.pkey = (i % 4 == 0) ? 0xFFFF : static_cast<uint16_t>(0x8000 | (i * 37));
    t.bth.fecn = (i % 4) == 1;
    t.bth.becn = (i % 4) == 2 || (i % 7) == 3;
    t.bth.dest_qp = 0x100000 * (i % 16) + 0x1234 + i;  // exercises all 24 bits
    t.bth.ack_req = (i % 2) == 1;
    t.bth.psn = (0xFFFFF0u + i * 0x10101u) & 0xFFFFFF;
    t.xrc_srqn = 0x00ABC0 + i;
    t.deth = {0x8000'0000u + i * 0x01010101u, 0xF00000u + i};
    t.reth = {0xFEDC'BA98'7654'3210ull + i * 0x1000'0000'0001ull, 0x8000'0001u + i * 0x111u,
              (info.kind == proto::OpKind::read_request) ? 1u << (i % 31) : 4096u + i};
    t.atomic = {0x0000'7F00'1234'5678ull + i * 8, 0xDEAD0000u + i, 0x1111'2222'3333'4444ull + i,
                0xFFFF'FFFF'FFFF'FFF0ull - i};
    static constexpr uint8_t kSyndromes[] = {0x1F, 0x00, 0x21, 0x3F, 0x60, 0x61, 0x62, 0x63, 0x64};
    t.aeth = {kSyndromes[i % 9], 0xFFFFFF - i};
    t.atomic_ack = 0x0123'4567'89AB'CDEFull ^ i;
    t.imm = (i % 2) ? 0x8000'0000u | i : i * 0x01000193u;  // high bit set on odd i
    t.ieth_rkey = 0xC000'0000u + i * 3;
    const bool carries_payload = info.kind == proto::OpKind::send ||
                                 info.kind == proto::OpKind::write ||
                                 info.kind == proto::OpKind::read_response;
    s.payload_len = carries_payload ? (i * 13) % 300 : 0;
    s.t.bth.pad = proto::pad_for(s.payload_len);
}

std::vector<uint8_t> valid_opcodes() {
    std::vector<uint8_t> ops;
    for (unsigned o = 0; o < 256; ++o)
        if (proto::opcode_info(static_cast<uint8_t>(o)).valid)
            ops.push_back(static_cast<uint8_t>(o));
    return ops;
}

// pcaps/all_opcodes.pcap: one IPv4 packet per defined opcode (RC, UC, UD, CNP, XRC).
std::vector<CapturedFrame> all_opcodes() {
    Trace tr;
    unsigned i = 0;
    for (uint8_t o : valid_opcodes()) {
        FrameSpec s = v4_spec("192.168.10.1", "192.168.10.2");
        s.src_port = static_cast<uint16_t>(49152 + i * 101);
        vary_fields(s, o, i++);
        tr.add(s, 1'000);
    }
    return tr.frames();
}

// pcaps/ipv6_vlan.pcapng: every opcode again over IPv6 with 0, 1 and 2 VLAN tags (802.1Q
// and 802.1ad), then IPv4 with tags and with header options, then IPv6 with extension
// headers (hop-by-hop, destination options, routing, an atomic fragment header). Written
// as pcapng with nanosecond if_tsresol.
std::vector<CapturedFrame> ipv6_vlan() {
    Trace tr;
    unsigned i = 0;
    for (uint8_t o : valid_opcodes()) {
        FrameSpec s;
        s.src_ip = ip("fd00:10::1");
        s.dst_ip = ip(i % 2 ? "fd00:10::2" : "2001:db8:0:1::42");
        s.flow_label = 0xABCDE ^ i;
        s.ecn = static_cast<uint8_t>(i % 4);
        s.src_port = static_cast<uint16_t>(60000 + i);
        s.vlan_count = static_cast<uint8_t>(i % 3);
        s.vlan_tpid[0] = (i % 6 == 2) ? proto::kEtherTypeQinQ : proto::kEtherTypeVlan;
        s.vlan_tci[0] = static_cast<uint16_t>(0x6000 | (100 + i));
        s.vlan_tci[1] = static_cast<uint16_t>(200 + i);
        vary_fields(s, o, i + 7);
        tr.add(s, 1'000);
        ++i;
    }
    static constexpr uint8_t kSample[] = {op::kWriteFirst, op::kReadResponseFirst,
                                          op::kAck,        op::kSendOnlyImm,
                                          op::kCmpSwap,    op::kUdSendOnlyImm};
    unsigned k = 0;
    for (uint8_t tags = 1; tags <= 2; ++tags)
        for (uint16_t tpid : {proto::kEtherTypeVlan, proto::kEtherTypeQinQ}) {
            FrameSpec s = v4_spec("172.16.0.1", "172.16.0.2");
            s.vlan_count = tags;
            s.vlan_tpid[0] = tpid;
            s.vlan_tci[0] = 10;
            s.vlan_tci[1] = 4094;
            vary_fields(s, kSample[k % 6], 40 + k);
            tr.add(s, 1'000);
            ++k;
        }
    for (unsigned words : {1u, 2u, 10u}) {  // 4, 8 and 40 bytes of options
        FrameSpec s = v4_spec("172.16.0.3", "172.16.0.4");
        s.vlan_count = words == 2 ? 1 : 0;
        vary_fields(s, kSample[k % 6], 40 + k);
        std::vector<uint8_t> f = build(s);
        insert::testing::add_ipv4_options(f, 14 + 4u * s.vlan_count, words);
        tr.add(std::move(f), 1'000);
        ++k;
    }
    for (uint8_t ext : {uint8_t{0}, uint8_t{60}, uint8_t{43}, uint8_t{44}}) {
        FrameSpec s;
        s.src_ip = ip("fd00:20::1");
        s.dst_ip = ip("fd00:20::2");
        vary_fields(s, kSample[k % 6], 40 + k);
        std::vector<uint8_t> f = build(s);
        insert::testing::add_ipv6_extension(f, 14, ext);
        tr.add(std::move(f), 1'000);
        ++k;
    }
    return tr.frames();
}

// pcaps/low_sport.pcap: RoCE packets whose UDP source port is a well-known port that
// Wireshark's port table maps to another protocol (TFTP, DNS, NTP, ...). Microsecond pcap,
// big-endian byte order.
std::vector<CapturedFrame> low_sport() {
    Trace tr;
    static constexpr uint16_t kPorts[] = {69,   53,   123,  67,  68,  161,  162,
                                          137,  138,  500,  514, 520, 443,  1900,
                                          4789, 5353, 6081, 7,   111, 2049, 4791};
    static constexpr uint8_t kOps[] = {op::kSendOnly,         op::kAck,
                                       op::kWriteOnly,        op::kReadRequest,
                                       op::kReadResponseOnly, op::kSendOnlyImm};
    unsigned i = 0;
    for (uint16_t port : kPorts)
        for (unsigned j = 0; j < 2; ++j) {
            FrameSpec s = v4_spec(j ? "10.1.0.2" : "10.1.0.1", j ? "10.1.0.1" : "10.1.0.2");
            s.src_port = port;
            vary_fields(s, kOps[(i + j) % 6], i * 2 + j);
            // Payloads that look like the protocol's own messages would: an NTP or DNS
            // dissector that took the packet would print fields, not an error.
            s.payload_len = 48 + 4 * j;
            s.t.bth.pad = 0;
            if (proto::opcode_info(s.t.bth.opcode).kind == proto::OpKind::ack ||
                proto::opcode_info(s.t.bth.opcode).kind == proto::OpKind::read_request)
                s.payload_len = 0;
            tr.add(s, 3'000);
            ++i;
        }
    return tr.frames();
}

// pcaps/cnp_ud.pcap: DCQCN congestion notifications, UD traffic (SEND Only with and
// without immediate, IPv4 and IPv6) and a full CM exchange (REQ, REP, RTU, DREQ, DREP).
std::vector<CapturedFrame> cnp_ud() {
    Trace tr;
    std::vector<uint8_t> mad;
    tr.add(cm_mad("10.2.0.1", "10.2.0.2", 0x0010, 0x11110001, 0, 0x0200, 7, mad), 0);
    tr.add(cm_mad("10.2.0.2", "10.2.0.1", 0x0013, 0x22220002, 0x11110001, 0x0300, 9, mad));
    tr.add(cm_mad("10.2.0.1", "10.2.0.2", 0x0014, 0x11110001, 0x22220002, 0, 0, mad));
    for (unsigned i = 0; i < 6; ++i) {
        FrameSpec s = v4_spec("10.2.0.2", "10.2.0.1");
        if (i >= 4) {
            s.src_ip = ip("fd00:30::2");
            s.dst_ip = ip("fd00:30::1");
        }
        s.dscp = 48;  // CNPs usually ride a higher-priority class
        s.ecn = 1;
        s.src_port = static_cast<uint16_t>(i == 3 ? 123 : 51000 + i);
        s.t.bth.opcode = op::kCnp;
        s.t.bth.dest_qp = 0x0200 + (i % 2);
        s.t.bth.becn = i != 1;  // DCQCN sets BECN; one without it
        s.t.bth.fecn = i == 5;
        s.t.bth.pkey = 0xFFFF;
        s.t.bth.psn = 0;
        tr.add(s, 5'000);
    }
    for (unsigned i = 0; i < 8; ++i) {
        FrameSpec s = v4_spec("10.2.0.1", i % 2 ? "10.2.0.3" : "10.2.0.4");
        if (i >= 6) {
            s.src_ip = ip("fd00:30::1");
            s.dst_ip = ip("fd00:30::3");
        }
        s.src_port = static_cast<uint16_t>(50000 + i);
        vary_fields(s, i % 3 == 0 ? op::kUdSendOnlyImm : op::kUdSendOnly, 60 + i);
        s.payload_len = 256 + i * 100;  // UD: one message per packet, up to the MTU
        s.t.bth.pad = proto::pad_for(s.payload_len);
        tr.add(s, 4'000);
    }
    tr.add(cm_mad("10.2.0.1", "10.2.0.2", 0x0015, 0x11110001, 0x22220002, 0, 0, mad));
    tr.add(cm_mad("10.2.0.2", "10.2.0.1", 0x0016, 0x22220002, 0x11110001, 0, 0, mad));
    return tr.frames();
}

// pcaps/hostile.pcap: every malformed reason, things that are not RoCE although they come
// close, and a few well-formed packets in between that must still decode.
std::vector<CapturedFrame> hostile() {
    Trace tr;
    auto good = [](uint8_t opcode, unsigned i) {
        FrameSpec s = v4_spec("10.9.0.1", "10.9.0.2");
        vary_fields(s, opcode, i);
        return s;
    };
    const std::size_t l3 = 14;
    tr.add(good(op::kSendOnly, 1));

    // length_mismatch: IP total length beyond the frame; UDP length above and below the IP
    // payload; an IPv6 payload length beyond the frame.
    std::vector<uint8_t> f = build(good(op::kWriteOnly, 2));
    proto::store_be16(&f[l3 + 2], static_cast<uint16_t>(proto::load_be16(&f[l3 + 2]) + 100));
    tr.add(f);
    f = build(good(op::kAck, 3));
    proto::store_be16(&f[l3 + 24], static_cast<uint16_t>(proto::load_be16(&f[l3 + 24]) + 4));
    tr.add(f);
    f = build(good(op::kSendOnly, 4));
    proto::store_be16(&f[l3 + 24], static_cast<uint16_t>(proto::load_be16(&f[l3 + 24]) - 4));
    tr.add(f);
    {
        FrameSpec s = good(op::kSendOnly, 5);
        s.src_ip = ip("fd00:99::1");
        s.dst_ip = ip("fd00:99::2");
        f = build(s);
        proto::store_be16(&f[l3 + 4], 0x4000);
        tr.add(f);
    }
    // A snaplen-cut frame: the record holds the first 60 bytes of a 1100-byte packet.
    f = build(good(op::kWriteFirst, 6));
    const auto full = static_cast<uint32_t>(f.size());
    f.resize(60);
    tr.add(f, 2'000, full);

    // truncated: UDP payload shorter than a BTH (UDP length 8 + 5).
    f = build(good(op::kSendOnly, 7));
    f.resize(l3 + 20 + 8 + 5);
    proto::store_be16(&f[l3 + 2], 20 + 8 + 5);
    proto::store_be16(&f[l3 + 24], 8 + 5);
    tr.add(f);
    // reserved opcodes: 0x15, IBTA 1.5's 0x1C, RD 0x40, UC READ 0x2C, 0xC0, 0xFF.
    for (uint8_t reserved : {0x15, 0x1C, 0x40, 0x2C, 0xC0, 0xFF}) {
        f = build(good(op::kSendOnly, reserved));
        f[l3 + 28] = reserved;
        tr.add(f);
    }
    // truncated by a negative payload_len: a RETH opcode whose UDP payload has room for
    // the BTH and ICRC only; a SEND whose PadCnt (3) exceeds its empty payload.
    f = build(good(op::kSendOnly, 8));
    f.resize(l3 + 20 + 8 + 12 + 4);
    proto::store_be16(&f[l3 + 2], 20 + 8 + 12 + 4);
    proto::store_be16(&f[l3 + 24], 8 + 12 + 4);
    f[l3 + 28] = op::kWriteOnly;
    tr.add(f);
    {
        FrameSpec s = good(op::kSendOnly, 9);
        s.payload_len = 0;
        s.t.bth.pad = 0;
        f = build(s);
        f[l3 + 29] |= 0x30;
        tr.add(f);
    }
    tr.add(good(op::kReadRequest, 10));

    // Not RoCE: IPv4 fragments (first with MF, and a later one), TCP to 4791, UDP to 4790,
    // ARP, three VLAN tags, a runt frame, an IPv6 fragment, an unknown EtherType.
    f = build(good(op::kSendOnly, 11));
    f[l3 + 6] = 0x20;  // MF
    tr.add(f);
    f = build(good(op::kSendOnly, 12));
    f[l3 + 6] = 0x00;
    f[l3 + 7] = 0xB9;  // offset 185 * 8
    tr.add(f);
    f = build(good(op::kSendOnly, 13));
    f[l3 + 9] = 6;  // TCP
    tr.add(f);
    {
        FrameSpec s = good(op::kSendOnly, 14);
        s.dst_port = 4790;
        tr.add(s);
    }
    {
        std::vector<uint8_t> arp(60, 0);
        for (int b = 0; b < 6; ++b) arp[b] = 0xFF;
        arp[12] = 0x08;
        arp[13] = 0x06;
        tr.add(arp);
    }
    {
        FrameSpec s = good(op::kSendOnly, 15);
        s.vlan_count = 2;
        f = build(s);
        const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x05};
        f.insert(f.begin() + 12, tag, tag + 4);
        tr.add(f);
    }
    tr.add(std::vector<uint8_t>{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0});
    {
        FrameSpec s = good(op::kSendOnly, 16);
        s.src_ip = ip("fd00:99::1");
        s.dst_ip = ip("fd00:99::2");
        f = build(s);
        insert::testing::add_ipv6_extension(f, l3, 44);
        f[l3 + 40 + 3] = 0x01;  // M flag: a real fragment
        tr.add(f);
    }
    f = build(good(op::kSendOnly, 17));
    f[12] = 0x88;
    f[13] = 0xB5;
    tr.add(f);

    // Well-formed packets with odd but legal details: Ethernet padding after the IP
    // datagram, a zero-length SEND, and the maximal PSN and QPN.
    f = build(good(op::kAck, 18));
    f.insert(f.end(), 6, 0xEE);
    tr.add(f);
    {
        FrameSpec s = good(op::kSendOnly, 19);
        s.payload_len = 0;
        s.t.bth.pad = 0;
        s.t.bth.psn = 0xFFFFFF;
        s.t.bth.dest_qp = 0xFFFFFF;
        tr.add(s);
    }
    return tr.frames();
}

bool write(const std::string& path, const std::vector<uint8_t>& image) {
    if (insert::testing::write_file(path, image)) return true;
    std::fprintf(stderr, "make-sample-pcaps: cannot write %s\n", path.c_str());
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make-sample-pcaps OUTDIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    using insert::testing::pcap_image;
    using insert::testing::pcapng_image;
    bool ok = write(dir + "/rc_mixed.pcap", pcap_image(rc_mixed()));
    ok = write(dir + "/all_opcodes.pcap", pcap_image(all_opcodes())) && ok;
    ok = write(dir + "/ipv6_vlan.pcapng", pcapng_image(ipv6_vlan())) && ok;
    ok = write(dir + "/low_sport.pcap",
               pcap_image(low_sport(), {.nanosecond = false, .big_endian = true})) &&
         ok;
    ok = write(dir + "/cnp_ud.pcap", pcap_image(cnp_ud())) && ok;
    ok = write(dir + "/hostile.pcap", pcap_image(hostile())) && ok;
    return ok ? 0 : 1;
}
