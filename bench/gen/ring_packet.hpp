// The form in which an observed packet crosses from the simulator's thread to the truth
// and output threads (pipeline.cpp): what those consumers read of a SimPacket, in two
// cache lines instead of the 184 bytes (three to four lines) of SimPacket itself.
//
// Every packet costs the simulator's core a write of its ring slot and each consumer's
// core a read of it, line by line from the other core: on `large` the 184-byte copy was the
// simulator thread's largest single item (memcpy) and the consumers' first touch of a slot
// a good part of their prefetch stages. The saving comes from what SimPacket spends on the
// way to the wire and never needs afterwards (drops, swap, spray delay), from BTH's bools
// packed into bits, and from RETH and AtomicETH sharing their VA and R_Key (no opcode
// carries both). pack() and unpack() are exact: unpack(pack(p)) equals p in every field
// but the simulation-only ones (gen_ring checks every built-in scenario).
#pragma once

#include <cstdint>

#include "bench/gen/sim_packet.hpp"
#include "dataplane/proto/opcodes.hpp"

namespace insert::gen {

struct alignas(64) RingPacket {
    uint64_t t_ns;
    uint64_t va;  // RETH or AtomicETH
    uint64_t swap_add, compare;
    uint64_t atomic_ack;
    uint32_t payload_len;
    uint32_t msg_uid, conn, index;
    uint32_t dest_qp, psn;
    uint32_t rkey, dma_len;  // RETH or AtomicETH (R_Key)
    uint32_t imm, ieth_rkey;
    uint32_t msn;
    uint32_t qkey, src_qp;
    uint32_t cm_local_id, cm_remote_id, cm_qpn, cm_psn;
    uint16_t src_host, dst_host, sport, pkey;
    uint8_t opcode, bth_bits, pad_tver, syndrome;
    PacketClass cls;
    uint8_t variant, ecn, dscp, dir;
    bool retx;
    CmKind cm;
};
static_assert(sizeof(RingPacket) == 128);

namespace ring_bits {
constexpr uint8_t kSe = 1, kMigReq = 2, kFecn = 4, kBecn = 8, kAckReq = 16;
}

inline void pack(const SimPacket& p, RingPacket& r) {
    using namespace ring_bits;
    const proto::TransportHeaders& t = p.t;
    // The simulator fills RETH or AtomicETH, whichever the opcode carries, never both.
    const bool atomic = (proto::opcode_info(t.bth.opcode).ext & proto::kAtomicEth) != 0;
    r.t_ns = p.t_ns;
    r.va = atomic ? t.atomic.va : t.reth.va;
    r.swap_add = t.atomic.swap_add;
    r.compare = t.atomic.compare;
    r.atomic_ack = t.atomic_ack;
    r.payload_len = p.payload_len;
    r.msg_uid = p.msg_uid;
    r.conn = p.conn;
    r.index = p.index;
    r.dest_qp = t.bth.dest_qp;
    r.psn = t.bth.psn;
    r.rkey = atomic ? t.atomic.rkey : t.reth.rkey;
    r.dma_len = t.reth.dma_len;
    r.imm = t.imm;
    r.ieth_rkey = t.ieth_rkey;
    r.msn = t.aeth.msn;
    r.qkey = t.deth.qkey;
    r.src_qp = t.deth.src_qp;
    r.cm_local_id = p.cm_local_id;
    r.cm_remote_id = p.cm_remote_id;
    r.cm_qpn = p.cm_qpn;
    r.cm_psn = p.cm_psn;
    r.src_host = p.src_host;
    r.dst_host = p.dst_host;
    r.sport = p.sport;
    r.pkey = t.bth.pkey;
    r.opcode = t.bth.opcode;
    r.bth_bits = static_cast<uint8_t>((t.bth.se ? kSe : 0) | (t.bth.migreq ? kMigReq : 0) |
                                      (t.bth.fecn ? kFecn : 0) | (t.bth.becn ? kBecn : 0) |
                                      (t.bth.ack_req ? kAckReq : 0));
    r.pad_tver = static_cast<uint8_t>(t.bth.pad | t.bth.tver << 4);
    r.syndrome = t.aeth.syndrome;
    r.cls = p.cls;
    r.variant = p.variant;
    r.ecn = p.ecn;
    r.dscp = p.dscp;
    r.dir = p.dir;
    r.retx = p.retx;
    r.cm = p.cm;
}

// The SimPacket `r` was packed from (simulation-only fields at their defaults). XRC (never
// generated) stays zero.
inline void unpack(const RingPacket& r, SimPacket& p) {
    using namespace ring_bits;
    // Every field is assigned (no `p = SimPacket{}` first: a 184-byte memset per packet
    // and consumer).
    proto::TransportHeaders& t = p.t;
    const bool atomic = (proto::opcode_info(r.opcode).ext & proto::kAtomicEth) != 0;
    t.atomic.va = atomic ? r.va : 0;
    t.atomic.rkey = atomic ? r.rkey : 0;
    t.reth.va = atomic ? 0 : r.va;
    t.reth.rkey = atomic ? 0 : r.rkey;
    t.ext = 0;
    t.xrc_srqn = 0;
    p.drop_before = p.drop_after = p.swap = false;
    p.extra_delay_ns = 0;
    t.reth.dma_len = r.dma_len;
    t.atomic.swap_add = r.swap_add;
    t.atomic.compare = r.compare;
    t.atomic_ack = r.atomic_ack;
    p.t_ns = r.t_ns;
    p.payload_len = r.payload_len;
    p.msg_uid = r.msg_uid;
    p.conn = r.conn;
    p.index = r.index;
    t.bth.dest_qp = r.dest_qp;
    t.bth.psn = r.psn;
    t.imm = r.imm;
    t.ieth_rkey = r.ieth_rkey;
    t.aeth.msn = r.msn;
    t.deth.qkey = r.qkey;
    t.deth.src_qp = r.src_qp;
    p.cm_local_id = r.cm_local_id;
    p.cm_remote_id = r.cm_remote_id;
    p.cm_qpn = r.cm_qpn;
    p.cm_psn = r.cm_psn;
    p.src_host = r.src_host;
    p.dst_host = r.dst_host;
    p.sport = r.sport;
    t.bth.pkey = r.pkey;
    t.bth.opcode = r.opcode;
    t.bth.se = (r.bth_bits & kSe) != 0;
    t.bth.migreq = (r.bth_bits & kMigReq) != 0;
    t.bth.fecn = (r.bth_bits & kFecn) != 0;
    t.bth.becn = (r.bth_bits & kBecn) != 0;
    t.bth.ack_req = (r.bth_bits & kAckReq) != 0;
    t.bth.pad = r.pad_tver & 0x0F;
    t.bth.tver = r.pad_tver >> 4;
    t.aeth.syndrome = r.syndrome;
    p.cls = r.cls;
    p.variant = r.variant;
    p.ecn = r.ecn;
    p.dscp = r.dscp;
    p.dir = r.dir;
    p.retx = r.retx;
    p.cm = r.cm;
}

}  // namespace insert::gen
