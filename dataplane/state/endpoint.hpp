// Per-endpoint state (SPEC.md sections 3-6): counters, request PSN window, pairing and the
// head of its open-message list.
#pragma once

#include <cstdint>

#include "dataplane/state/endpoint_key.hpp"
#include "dataplane/state/message.hpp"
#include "dataplane/state/psn_window.hpp"
#include "dataplane/state/records.hpp"

namespace insert::state {

// A NAK seen for an endpoint's messages before the message it hits was observed.
struct PendingNak {
    uint32_t psn = 0;
    uint8_t syndrome = 0;
    bool used = false;
};

// A Middle/Last packet observed before the First of its message.
struct OrphanPacket {
    uint64_t ts_ns = 0;
    uint64_t ts_last_ns = 0;  // latest observation, duplicates included
    uint32_t dups = 0;        // duplicates of it observed before its message existed
    uint32_t psn = 0;
    uint32_t payload_len = 0;
    uint32_t imm_or_inv = 0;
    MsgOp op = MsgOp::send;
    bool used = false;
    bool last = false;
    bool has_imm = false;
    bool has_inv = false;
};

// Packets held for one endpoint while their First is missing; taken from a per-worker
// pool only when reordering needs it (most endpoints never do).
struct OrphanBlock {
    static constexpr int kSlots = 8;
    OrphanPacket slots[kSlots];
    uint8_t next_victim = 0;  // round-robin replacement when all slots are used
};

// The per-endpoint counters of the `qp` record (SPEC 7).
struct EndpointCounters {
    uint64_t pkts = 0;
    uint64_t bytes = 0;
    uint64_t msgs[5] = {};  // indexed by MsgOp
    uint64_t dup_pkts = 0;
    uint64_t ooo_pkts = 0;
    uint64_t gaps = 0;
    uint64_t missing = 0;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    uint64_t t_first_ns = 0;
    uint64_t t_last_ns = 0;
    NakCounts naks;
};

struct Endpoint {
    static constexpr int kPendingNaks = 4;
    // RNICs keep up to a few hundred requests in flight per QP (perftest: 128 by default).
    static constexpr uint32_t kMaxOpenMessages = 256;

    EndpointKey key;
    // Pairing: the first source (IP, UDP port) of RC/UC/XRC packets, and the peer.
    proto::IpAddress src_ip;
    proto::IpAddress peer_ip;
    uint32_t peer_qpn = 0;
    uint32_t peer_index = kNoIndex;
    uint16_t src_port = 0;
    PairBy pair_by = PairBy::none;
    TransportFamily transport = TransportFamily::unknown;
    bool has_source = false;
    bool got_response = false;       // has received an ACK/ATOMIC ACK/READ response/NAK
    bool multi_source_ip = false;    // received from a second IP: no longer a sport/ip candidate
    bool multi_source_port = false;  // received from a second port: no longer a sport candidate
    bool reported_unknown = false;   // unknown_qp event already emitted
    bool last_request_read = false;  // the request at max_psn was a READ

    // Open messages to this endpoint, oldest first.
    uint32_t msg_head = kNoIndex;
    uint32_t msg_tail = kNoIndex;
    uint32_t msg_count = 0;
    uint32_t read_last_psn = 0;  // Last/Only response PSN of the READ at max_psn
    bool read_last_known = false;

    EndpointCounters counters;
    PendingNak pending[kPendingNaks];
    uint8_t pending_next = 0;
    uint32_t orphans = kNoIndex;  // OrphanBlock in the worker's pool, when needed
    bool live = false;
    uint64_t pair_generation = UINT64_MAX;  // pairing tables' generation at the last attempt
    uint32_t next_same_source = kNoIndex;   // next endpoint at this IP receiving from src_ip
    uint32_t read_dma_len = 0;              // DMA length of the READ at max_psn
    PsnWindow window;
};

}  // namespace insert::state
