// What the simulator knows about one packet: the header values it will carry on the wire
// and the generator's own bookkeeping (which message, which connection, what the network
// does to it). The frame encoder turns the first part into bytes; the truth observer
// reads both parts, never the bytes.
#pragma once

#include <cstdint>

#include "dataplane/proto/headers.hpp"

namespace insert::gen {

constexpr uint32_t kNone = 0xFFFFFFFF;
constexpr uint16_t kNoHost = 0xFFFF;

enum class PacketClass : uint8_t { roce, background, malformed };

// Non-RoCE frames mixed into the capture (SPEC 1: other ports, fragments, non-IP).
enum class BackgroundKind : uint8_t { udp_other_port, udp_from_4791, tcp, arp, ipv4_fragment };
constexpr uint8_t kBackgroundKinds = 5;

// Deliberately malformed UDP-4791 frames, one per SPEC 1 reason (two ways to be truncated).
enum class MalformedKind : uint8_t {
    length_mismatch,    // UDP length != IP payload length
    truncated_short,    // UDP payload shorter than a BTH
    reserved_opcode,    // BTH opcode 0x15
    truncated_headers,  // RETH cut short: payload_len < 0
};
constexpr uint8_t kMalformedKinds = 4;

enum class CmKind : uint8_t { none, req, rep, rtu };

struct SimPacket {
    uint64_t t_ns = 0;  // observation time (capture timestamp)
    PacketClass cls = PacketClass::roce;
    uint8_t variant = 0;  // BackgroundKind or MalformedKind
    uint8_t ecn = 2;      // ECT(0); 3 = CE
    uint8_t dscp = 26;
    uint16_t src_host = 0;
    uint16_t dst_host = 0;
    uint16_t sport = 49152;
    // The host whose NIC sends it (its source MAC): kNoHost for src_host itself; a spoofed
    // injection's attacker, whose packet claims another's address.
    uint16_t nic_host = kNoHost;
    uint32_t payload_len = 0;
    proto::TransportHeaders t;  // opcode, PSN, DestQP and extension header values

    // Generator knowledge.
    uint32_t msg_uid = kNone;  // request packets and READ responses: their message
    uint32_t conn = kNone;
    uint32_t index = 0;  // packet index inside its message / READ response index
    bool retx = false;   // a retransmission by the requester
    CmKind cm = CmKind::none;
    uint32_t cm_local_id = 0, cm_remote_id = 0, cm_qpn = 0, cm_psn = 0;

    // What the network does to it (simulation only).
    uint8_t dir = 0;  // 0: requester -> responder, 1: back
    bool drop_before = false;
    bool drop_after = false;
    bool swap = false;
    uint64_t extra_delay_ns = 0;
};

}  // namespace insert::gen
