// Decoded RoCEv2 transport headers: the values of BTH and every extension header, shared
// by the parser (wire -> struct) and the builder (struct -> wire). Plain values in host
// byte order; the wire layout lives only in parser.cpp and builder.cpp.
#pragma once

#include <cstdint>

#include "dataplane/proto/opcodes.hpp"

namespace insert::proto {

struct Bth {
    uint8_t opcode = 0;
    bool se = false;
    bool migreq = false;
    uint8_t pad = 0;   // PadCnt, 0..3
    uint8_t tver = 0;  // transport header version, 0
    uint16_t pkey = 0xFFFF;
    bool fecn = false;
    bool becn = false;
    uint32_t dest_qp = 0;  // 24 bits
    bool ack_req = false;
    uint32_t psn = 0;  // 24 bits
};

struct Reth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_len = 0;
};

struct Aeth {
    uint8_t syndrome = 0;
    uint32_t msn = 0;  // 24 bits
};

struct AtomicEth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint64_t swap_add = 0;
    uint64_t compare = 0;
};

struct Deth {
    uint32_t qkey = 0;
    uint32_t src_qp = 0;  // 24 bits
};

// BTH plus whichever extension headers the opcode carries (`ext`, an ExtHeader mask).
struct TransportHeaders {
    Bth bth;
    uint16_t ext = 0;
    uint32_t xrc_srqn = 0;
    Deth deth;
    Reth reth;
    AtomicEth atomic;
    Aeth aeth;
    uint64_t atomic_ack = 0;  // AtomicAckETH original remote data
    uint32_t imm = 0;         // ImmDt, as the 32-bit big-endian value on the wire
    uint32_t ieth_rkey = 0;

    bool has(ExtHeader h) const { return (ext & h) != 0; }
};

}  // namespace insert::proto
