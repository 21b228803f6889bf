// One open RDMA message (SPEC.md section 5) while it is being assembled, and the
// per-worker pool they live in. Open messages of an endpoint form a list in PSN order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/proto/parser.hpp"
#include "dataplane/state/records.hpp"
#include "dataplane/state/slot_pool.hpp"

namespace insert::state {

// Two cache lines exactly, so that a prefetch of both covers it (the origin fields filled
// the last free bytes of each). The first line holds what
// the next packet of a message reads and writes (continue_tail, within, attribute_packet):
// the Middle packets of long messages, most packets at line rate, need only that line and
// are prefetched so (EngineImpl::stage_messages). The second holds what a message's First,
// Last, READ responses and completion add.
struct alignas(64) OpenMessage {
    // Line 0.
    uint32_t next = kNoIndex;  // next open message of the endpoint (newer psn_first)
    uint32_t psn_first = 0;
    uint32_t psn_last = 0;     // valid iff last_known
    uint32_t psn_newest = 0;   // newest PSN observed (requests; READ: responses)
    uint32_t psn_run = 0;      // SEND/WRITE: PSNs psn_first..psn_run were all observed
    uint32_t length_hint = 0;  // WRITE: packets implied by RETH length / first payload; 0 unknown
    // SEND/WRITE: the First of the nearest later message, iff has_next_first. Its range
    // ends before that, also after the later message has been frozen and left the list
    // (a UC message completes on its own while an earlier one with a lost Last stays open).
    uint32_t next_first_psn = 0;
    uint32_t pkts = 0;
    uint64_t bytes = 0;
    uint64_t t_first_ns = 0;
    uint64_t t_last_ns = 0;
    MsgOp op = MsgOp::send;
    bool last_known = false;
    bool unreliable = false;  // UC: complete once all PSNs were observed
    bool has_next_first = false;
    bool has_next_request = false;
    // The port its opening packet came in on (ParsedPacket::port): written with the rest of
    // this line when the message is created, read when it is frozen; no other packet's.
    uint16_t port = proto::kNoPort;
    // Line 1.
    uint32_t next_request_psn = 0;  // READ: PSN of the following request, iff has_next_request
    uint32_t retx_pkts = 0;
    uint32_t naks = 0;
    uint32_t rnr_naks = 0;
    uint32_t rkey = 0;
    uint32_t dma_len = 0;
    uint32_t imm = 0;
    uint32_t inv = 0;
    uint64_t va = 0;
    uint64_t read_seen = 0;  // READ: bitmap of response PSNs below read_top
    uint32_t read_top = 0;   // READ: newest response PSN + 1 (relative to psn_first)
    MsgStatus nak_status = MsgStatus::incomplete;  // latest seq/RNR NAK that hit it
    bool has_imm = false;
    bool has_inv = false;
    bool has_va = false;
    bool has_dma_len = false;
    // Where its opening packet came from: Ethernet source and IPv4 TTL / IPv6 hop limit.
    FrameOrigin origin;
};

static_assert(sizeof(OpenMessage) == 128);
static_assert(offsetof(OpenMessage, next_request_psn) == 64, "line 0 holds the hot fields only");

using MessagePool = SlotPool<OpenMessage>;

}  // namespace insert::state
