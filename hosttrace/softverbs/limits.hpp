// Capacities softverbs advertises through ibv_query_device and enforces. Every queue is
// preallocated at its advertised size, so memory is bounded by what the application asks for.
#pragma once

#include <cstdint>

namespace insert::softverbs {

constexpr uint32_t kMaxSendSge = 16;
constexpr uint32_t kMaxRecvSge = 16;
constexpr uint32_t kMaxInline = 512;  // perftest asks for up to 220 B by default
constexpr uint32_t kMaxQpWr = 16384;
constexpr uint32_t kMaxCqe = 1u << 20;
constexpr uint32_t kMaxQps = 4096;      // per context: QPN = base + slot
constexpr uint32_t kMaxMrs = 16384;     // per context: key = slot << 8 | tag
constexpr uint32_t kMaxRdAtomic = 16;   // outstanding READ/atomic per QP
constexpr uint32_t kAtomicReplay = 16;  // atomic results kept for duplicate requests
constexpr uint64_t kMaxMrSize = 1ull << 40;

// Requester window: packets sent and not yet acknowledged. 256 packets of 4 KB stay inside
// the 4 MB socket buffers that a default Linux net.core.rmem_max allows.
constexpr uint32_t kMaxInflightPkts = 256;
// Ask for an ACK at least this often inside long messages, so the window keeps moving.
constexpr uint32_t kAckReqEvery = 32;

// Largest UDP payload (BTH..ICRC) softverbs sends: 4096 B MTU plus headers.
constexpr uint32_t kMaxUdpPayload = 4096 + 12 + 28 + 16 + 4 + 8;
// build_frame() writes Ethernet + IPv4 + UDP in front of the transport headers.
constexpr uint32_t kFrameHeadroom = 14 + 20 + 8;
constexpr uint32_t kFrameBufSize = kFrameHeadroom + kMaxUdpPayload + 64;

constexpr uint32_t kBatch = 32;  // packets per sendmmsg/recvmmsg

}  // namespace insert::softverbs
