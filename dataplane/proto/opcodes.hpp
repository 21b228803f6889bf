// RoCEv2 / InfiniBand BTH opcodes (IBTA vol.1 ch.9, RoCEv2 annex A17) and what each one
// carries. One constexpr table is the single source of truth for the parser, the builder,
// the state machine and the synthesizer.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace insert::proto {

enum class Transport : uint8_t { rc, uc, ud, xrc, cnp, reserved };

// What an opcode does, independent of its transport.
enum class OpKind : uint8_t {
    send,
    write,
    read_request,
    read_response,
    ack,
    atomic_ack,
    cmp_swap,
    fetch_add,
    cnp,
    reserved,
};

// Place of a packet inside its message (responses and single-packet ops are `only`).
enum class Position : uint8_t { first, middle, last, only };

// Extension headers, as bits, in wire order after the BTH.
enum ExtHeader : uint16_t {
    kXrcEth = 1u << 0,        // 4 B: XRC SRQ number
    kDeth = 1u << 1,          // 8 B: Q_Key, SrcQP
    kReth = 1u << 2,          // 16 B: VA, R_Key, DMA length
    kAtomicEth = 1u << 3,     // 28 B: VA, R_Key, swap/add, compare
    kAeth = 1u << 4,          // 4 B: syndrome, MSN
    kAtomicAckEth = 1u << 5,  // 8 B: original remote data
    kImmDt = 1u << 6,         // 4 B: immediate data
    kIeth = 1u << 7,          // 4 B: R_Key to invalidate
    kCnpPad = 1u << 8,        // 16 B: reserved bytes of a CNP
};

constexpr std::size_t kBthLen = 12;
constexpr std::size_t kIcrcLen = 4;
constexpr uint16_t kRoceV2Port = 4791;

constexpr std::size_t ext_header_len(uint16_t mask) {
    std::size_t n = 0;
    if (mask & kXrcEth) n += 4;
    if (mask & kDeth) n += 8;
    if (mask & kReth) n += 16;
    if (mask & kAtomicEth) n += 28;
    if (mask & kAeth) n += 4;
    if (mask & kAtomicAckEth) n += 8;
    if (mask & kImmDt) n += 4;
    if (mask & kIeth) n += 4;
    if (mask & kCnpPad) n += 16;
    return n;
}

struct OpcodeInfo {
    bool valid = false;
    Transport transport = Transport::reserved;
    OpKind kind = OpKind::reserved;
    Position position = Position::only;
    uint16_t ext = 0;      // ExtHeader mask
    uint8_t ext_len = 0;   // bytes of extension headers
    bool request = false;  // requester -> responder (SEND/WRITE/READ req/atomics)
    bool has_imm = false;
    bool has_inv = false;
};

namespace detail {

// The 24 RC operation codes (low 5 bits); RC, UC and XRC share them.
struct BaseOp {
    OpKind kind;
    Position position;
    uint16_t ext;
};

constexpr std::array<BaseOp, 0x18> kRcOps = {{
    {OpKind::send, Position::first, 0},                           // 0x00
    {OpKind::send, Position::middle, 0},                          // 0x01
    {OpKind::send, Position::last, 0},                            // 0x02
    {OpKind::send, Position::last, kImmDt},                       // 0x03
    {OpKind::send, Position::only, 0},                            // 0x04
    {OpKind::send, Position::only, kImmDt},                       // 0x05
    {OpKind::write, Position::first, kReth},                      // 0x06
    {OpKind::write, Position::middle, 0},                         // 0x07
    {OpKind::write, Position::last, 0},                           // 0x08
    {OpKind::write, Position::last, kImmDt},                      // 0x09
    {OpKind::write, Position::only, kReth},                       // 0x0A
    {OpKind::write, Position::only, kReth | kImmDt},              // 0x0B
    {OpKind::read_request, Position::only, kReth},                // 0x0C
    {OpKind::read_response, Position::first, kAeth},              // 0x0D
    {OpKind::read_response, Position::middle, 0},                 // 0x0E
    {OpKind::read_response, Position::last, kAeth},               // 0x0F
    {OpKind::read_response, Position::only, kAeth},               // 0x10
    {OpKind::ack, Position::only, kAeth},                         // 0x11
    {OpKind::atomic_ack, Position::only, kAeth | kAtomicAckEth},  // 0x12
    {OpKind::cmp_swap, Position::only, kAtomicEth},               // 0x13
    {OpKind::fetch_add, Position::only, kAtomicEth},              // 0x14
    {OpKind::reserved, Position::only, 0},                        // 0x15
    {OpKind::send, Position::last, kIeth},                        // 0x16
    {OpKind::send, Position::only, kIeth},                        // 0x17
}};

constexpr bool is_request_kind(OpKind k) {
    return k == OpKind::send || k == OpKind::write || k == OpKind::read_request ||
           k == OpKind::cmp_swap || k == OpKind::fetch_add;
}

constexpr OpcodeInfo make_info(Transport t, BaseOp op, uint16_t extra_ext) {
    OpcodeInfo info;
    info.valid = true;
    info.transport = t;
    info.kind = op.kind;
    info.position = op.position;
    info.ext = static_cast<uint16_t>(op.ext | extra_ext);
    info.ext_len = static_cast<uint8_t>(ext_header_len(info.ext));
    info.request = is_request_kind(op.kind);
    info.has_imm = (op.ext & kImmDt) != 0;
    info.has_inv = (op.ext & kIeth) != 0;
    return info;
}

constexpr std::array<OpcodeInfo, 256> make_opcode_table() {
    std::array<OpcodeInfo, 256> table{};
    for (unsigned low = 0; low < kRcOps.size(); ++low) {
        const BaseOp op = kRcOps[low];
        if (op.kind == OpKind::reserved) continue;
        table[0x00 + low] = make_info(Transport::rc, op, 0);
        // XRC: requests carry an XRCETH first; responses are laid out as RC's.
        table[0xA0 + low] = make_info(Transport::xrc, op,
                                      is_request_kind(op.kind) ? uint16_t{kXrcEth} : uint16_t{0});
        // UC: SEND and WRITE only (0x20-0x2B).
        if (low <= 0x0B) table[0x20 + low] = make_info(Transport::uc, op, 0);
    }
    table[0x64] = make_info(Transport::ud, {OpKind::send, Position::only, 0}, kDeth);
    table[0x65] = make_info(Transport::ud, {OpKind::send, Position::only, kImmDt}, kDeth);
    OpcodeInfo cnp = make_info(Transport::cnp, {OpKind::cnp, Position::only, kCnpPad}, 0);
    cnp.request = false;
    table[0x81] = cnp;
    return table;
}

}  // namespace detail

inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = detail::make_opcode_table();

constexpr const OpcodeInfo& opcode_info(uint8_t opcode) {
    return kOpcodeTable[opcode];
}

// Named opcodes used by tests, the builder's callers and the synthesizer.
namespace op {
constexpr uint8_t kSendFirst = 0x00, kSendMiddle = 0x01, kSendLast = 0x02, kSendLastImm = 0x03,
                  kSendOnly = 0x04, kSendOnlyImm = 0x05, kWriteFirst = 0x06, kWriteMiddle = 0x07,
                  kWriteLast = 0x08, kWriteLastImm = 0x09, kWriteOnly = 0x0A, kWriteOnlyImm = 0x0B,
                  kReadRequest = 0x0C, kReadResponseFirst = 0x0D, kReadResponseMiddle = 0x0E,
                  kReadResponseLast = 0x0F, kReadResponseOnly = 0x10, kAck = 0x11,
                  kAtomicAck = 0x12, kCmpSwap = 0x13, kFetchAdd = 0x14, kSendLastInv = 0x16,
                  kSendOnlyInv = 0x17;
constexpr uint8_t kUcBase = 0x20, kXrcBase = 0xA0;
constexpr uint8_t kUdSendOnly = 0x64, kUdSendOnlyImm = 0x65, kCnp = 0x81;
}  // namespace op

std::string_view transport_name(Transport t);  // "RC" "UC" "UD" "XRC" "CNP"
std::string_view op_kind_name(OpKind k);       // "SEND" "WRITE" "READ" "CMP_SWAP" ...

}  // namespace insert::proto
