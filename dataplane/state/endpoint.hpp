// Per-endpoint state (SPEC.md sections 3-6): counters, request PSN window, pairing and the
// head of its open-message list.
#pragma once

#include <cstddef>
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

// The per-endpoint counters of the `qp` record (SPEC 7) that only some packets touch
// (retransmissions, gaps, congestion, NAKs): they live in the endpoint's cold lines.
struct EndpointCounters {
    uint64_t dup_pkts = 0;
    uint64_t ooo_pkts = 0;
    uint64_t gaps = 0;
    uint64_t missing = 0;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    NakCounts naks;
};

// The counters every packet updates.
struct TrafficCounters {
    uint64_t pkts = 0;
    uint64_t bytes = 0;
    uint64_t t_first_ns = 0;
    uint64_t t_last_ns = 0;
};

// Laid out by cache line, because at 100k+ endpoints every line a packet touches is a
// miss (~150-200 ns here): a request reads lines 0 and 1 and one line of the PSN window's
// bits; a response reads lines 0 and 1 of its endpoint and line 0 of the peer, whose
// message completion then also reads the peer's line 4. The engine prefetches exactly
// these lines a few packets ahead (EngineImpl::process_burst). Everything else is cold.
struct alignas(64) Endpoint {
    static constexpr int kPendingNaks = 4;
    // RNICs keep up to a few hundred requests in flight per QP (perftest: 128 by default).
    static constexpr uint32_t kMaxOpenMessages = 256;

    // ---- line 0: identity, the first source, open messages, pairing state ----
    EndpointKey key;
    // Pairing: the first source (IP, UDP port) of RC/UC/XRC packets, and the peer.
    proto::IpAddress src_ip;
    // Open messages to this endpoint, oldest first.
    uint32_t msg_head = kNoIndex;
    uint32_t msg_tail = kNoIndex;
    uint32_t peer_index = kNoIndex;  // valid while the peer's incarnation matches
    uint16_t msg_count = 0;
    uint16_t src_port = 0;
    PairBy pair_by = PairBy::none;
    TransportFamily transport = TransportFamily::unknown;
    // Flags as bits: line 0 has no room for a byte each.
    bool has_source : 1 = false;
    bool got_response : 1 = false;  // has received an ACK/ATOMIC ACK/READ response/NAK
    bool live : 1 = false;
    bool last_request_read : 1 = false;  // the request at max_psn was a READ
    bool read_last_known : 1 = false;
    bool multi_source_ip : 1 = false;    // from a second IP: no longer a sport/ip candidate
    bool multi_source_port : 1 = false;  // from a second port: no longer a sport candidate
    bool reported_unknown : 1 = false;   // unknown_qp event already emitted
    uint8_t pending_used = 0;            // used entries of pending[] (most often none)
    uint32_t orphans = kNoIndex;         // OrphanBlock in the worker's pool, when needed

    // ---- line 1: per-packet counters, READ bookkeeping, the PSN window's header ----
    TrafficCounters traffic;
    uint64_t pair_generation = UINT64_MAX;  // pairing tables' generation at the last attempt
    // Which creation of the slot this is (engine-wide sequence): a peer_index whose
    // endpoint was evicted and the slot reused no longer matches peer_incarnation.
    uint32_t incarnation = 0;
    uint32_t peer_incarnation = 0;
    uint32_t read_last_psn = 0;  // Last/Only response PSN of the READ at max_psn
    uint32_t read_dma_len = 0;   // DMA length of the READ at max_psn
    PsnWindow window;            // header ends line 1; its bits fill lines 2 and 3

    // ---- line 4: what a message's completion reads of its endpoint ----
    proto::IpAddress peer_ip;
    uint32_t peer_qpn = 0;
    uint64_t msgs[5] = {};  // completed messages, indexed by MsgOp

    // ---- cold ----
    EndpointCounters counters;
    PendingNak pending[kPendingNaks];
    uint8_t pending_next = 0;
    uint32_t next_same_source = kNoIndex;  // next endpoint at this IP receiving from src_ip
};

static_assert(offsetof(Endpoint, traffic) == 64, "line 0 holds what every packet reads");
static_assert(offsetof(Endpoint, window) + PsnWindow::kBitsOffset == 128,
              "the window's bits start line 2");
static_assert(offsetof(Endpoint, peer_ip) == 256, "line 4 starts after the window");
static_assert(offsetof(Endpoint, counters) <= 320, "line 4 holds peer and message counts");

}  // namespace insert::state
