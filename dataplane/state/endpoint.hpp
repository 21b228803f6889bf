// Per-endpoint state (SPEC.md sections 3-6): counters, request PSN window, pairing and the
// head of its open-message list. One Endpoint holds one *part* of an endpoint: the packets
// it receives from one source IP (docs/semantics.md "Sources"), so that a third host's
// packets never touch the sequence state of the endpoint's own requester.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/proto/psn.hpp"
#include "dataplane/state/endpoint_key.hpp"
#include "dataplane/state/message.hpp"
#include "dataplane/state/psn_window.hpp"
#include "dataplane/state/records.hpp"

namespace insert::state {

// A NAK seen for an endpoint's messages before the message it hits was observed: its PSN
// and AETH syndrome in one word (which slots are used: Endpoint::pending_mask).
struct PendingNak {
    uint32_t bits = 0;
    PendingNak() = default;
    PendingNak(uint32_t psn, uint8_t syndrome)
        : bits((psn & 0xFFFFFF) | uint32_t{syndrome} << 24) {}
    uint32_t psn() const { return bits & 0xFFFFFF; }
    uint8_t syndrome() const { return static_cast<uint8_t>(bits >> 24); }
};

// Middle/Last packets held for their message (observed before its First, or past a hole
// of the message they may belong to): a run of consecutive PSNs, psn .. psn + count - 1,
// ended at most by a Last. Consecutive Middles with no Last among them are one message's,
// so a run joins a message whole, and the train of packets that follows a lost First takes
// one slot, not one per packet.
struct OrphanRun {
    uint64_t ts_ns = 0;        // earliest observation
    uint64_t ts_last_ns = 0;   // latest observation, duplicates included
    uint32_t dups = 0;         // duplicates of its packets observed while held
    uint32_t psn = 0;          // the first PSN
    uint32_t payload_len = 0;  // of all its packets
    uint32_t imm_or_inv = 0;   // of its Last
    uint16_t count = 0;        // packets (at most the PSN window, 1024)
    MsgOp op = MsgOp::send;
    bool used = false;
    bool last = false;  // its newest packet is a Last
    bool has_imm = false;
    bool has_inv = false;
    uint32_t end() const { return proto::psn_add(psn, count - 1u); }
};
static_assert(sizeof(OrphanRun) == 40, "as the single packets it replaced: memory per endpoint");

// Runs held for one endpoint; taken from a per-worker pool only when reordering or a loss
// needs it (most endpoints never do). 16 runs, because spraying needs more than 8: a lost
// First's train of Middles sprayed over paths arrives as many separate runs, next to runs
// still waiting for an older message's First (the stress_mixed.json sweep shows it). The
// pool is sized in bytes, so 16-run blocks cost the memory 8-run ones did.
struct OrphanBlock {
    static constexpr int kSlots = 16;
    OrphanRun slots[kSlots];
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

// The counters every packet updates (the first packet's time is cold: written once).
struct TrafficCounters {
    uint64_t pkts = 0;
    uint64_t bytes = 0;
    uint64_t t_last_ns = 0;
};

// Laid out by cache line, because at 100k+ endpoints every line a packet touches is a
// DRAM miss (150-200 ns here, more under load), and those misses - not the work - set the
// packet rate. Line 0 is everything a packet of a paired endpoint with in-order PSNs
// reads or writes, requests and responses alike; line 1 is what completing one of its
// messages reads (the record's addresses, the message counts); lines 2-3 are the PSN
// window's bits, read only for holes, late and duplicate PSNs (PsnRun); the rest is
// touched by packets that need it (first packet, pairing, congestion, NAKs, reordering).
// The engine prefetches exactly these lines ahead of the work (engine_prefetch.cpp).
struct alignas(64) Endpoint {
    static constexpr int kPendingNaks = 4;
    // RNICs keep up to a few hundred requests in flight per QP (perftest: 128 by default).
    static constexpr uint32_t kMaxOpenMessages = 256;

    // ---- line 0 (hot): every packet ----
    TrafficCounters traffic;
    PsnRun window;  // max_psn and the in-order run; the bits are in lines 2-3
    // Open messages to this endpoint, oldest first.
    uint32_t msg_head = kNoIndex;
    uint32_t msg_tail = kNoIndex;
    // Which creation of the slot this is (engine-wide sequence): a peer_index whose
    // endpoint was evicted and the slot reused no longer matches peer_incarnation.
    uint32_t incarnation = 0;
    uint32_t peer_index = kNoIndex;  // valid while the peer's incarnation matches
    uint32_t peer_incarnation = 0;
    // The part's source as a 4-byte IPv4 address when it is one, so that the per-packet
    // "same source?" check stays on this line; src_ip (line 4) holds it in full.
    uint32_t src_v4 = 0;
    uint16_t msg_count = 0;
    uint16_t src_port = 0;
    PairBy pair_by = PairBy::none;
    TransportFamily transport = TransportFamily::unknown;
    bool has_source : 1 = false;    // registered in the pairing tables (an RC/UC/XRC packet)
    bool src_is_v4 : 1 = false;     // src_v4 is the source
    bool got_response : 1 = false;  // has received an ACK/ATOMIC ACK/READ response/NAK
    bool live : 1 = false;
    bool last_request_read : 1 = false;  // the request at max_psn was a READ
    bool read_last_known : 1 = false;
    bool pairing_excluded : 1 = false;   // no room in the pairing tables: no sport/ip/psn rule
    bool multi_source_port : 1 = false;  // from a second port: no longer a sport candidate
    bool secondary : 1 = false;          // a part other than the index's (EngineImpl::parts_)
    bool reported_unknown : 1 = false;   // unknown_qp event already emitted
    bool has_orphans : 1 = false;        // orphans != kNoIndex
    bool has_pending : 1 = false;        // pending_mask != 0
    // Equal to the engine's report parity once the periodic report in progress has
    // reported this part's endpoint (EngineImpl::report_before_change).
    bool report_parity : 1 = false;

    // ---- line 1: what completing a message reads (its record's addresses, counts) ----
    EndpointKey key;
    proto::IpAddress peer_ip;
    uint32_t peer_qpn = 0;
    uint32_t read_last_psn = 0;  // Last/Only response PSN of the READ at max_psn
    // Completed messages by MsgOp: low halves here, high halves (carries) in msgs_hi.
    uint32_t msgs_lo[5] = {};

    // ---- lines 2-3: the PSN window's bits ----
    PsnBits window_bits;

    // ---- line 4: first packet, pairing, READ requests ----
    proto::IpAddress src_ip;  // the part's source, set when the part is created
    uint64_t t_first_ns = 0;
    uint64_t pair_generation = UINT64_MAX;  // pairing tables' generation at the last attempt
    uint32_t read_dma_len = 0;              // DMA length of the READ at max_psn
    uint32_t orphans = kNoIndex;            // OrphanBlock in the worker's pool, when needed
    uint32_t next_same_source = kNoIndex;   // next endpoint at this IP receiving from src_ip
    uint32_t msgs_hi[5] = {};

    // ---- cold ----
    EndpointCounters counters;
    // When this part's first non-CNP packet came (its `transport`): an endpoint's parts
    // are merged into one `qp` record by it (state/qp_merge.hpp).
    uint64_t t_transport_ns = 0;
    PendingNak pending[kPendingNaks];
    uint32_t next_part = kNoIndex;  // the next part of the same (ip, qpn), from the index's
    uint8_t pending_mask = 0;       // used entries of pending[] (most often none)
    uint8_t pending_next = 0;

    // The part's source: the IP every packet of this part comes from.
    void set_source_ip(const proto::IpAddress& ip) {
        src_ip = ip;
        src_is_v4 = ip.is_v4();
        if (src_is_v4) std::memcpy(&src_v4, ip.bytes.data() + 12, 4);
    }
    // ip == src_ip, reading the cold copy only for IPv6 sources.
    bool same_source_ip(const proto::IpAddress& ip) const {
        if (!src_is_v4) return ip == src_ip;
        uint32_t v4;
        std::memcpy(&v4, ip.bytes.data() + 12, 4);
        return v4 == src_v4 && ip.is_v4();
    }
    // Whether note_source() would change nothing for a packet from this part's source on
    // `port`: the part is registered, and the port is its first or already counted as a
    // second one.
    bool source_noted(uint16_t port) const {
        return has_source && (multi_source_port || src_port == port);
    }
    void set_orphans(uint32_t block) {
        orphans = block;
        has_orphans = block != kNoIndex;
    }
    void set_pending_mask(uint8_t mask) {
        pending_mask = mask;
        has_pending = mask != 0;
    }
    void count_msg(MsgOp op) {
        const int i = static_cast<int>(op);
        if (++msgs_lo[i] == 0) ++msgs_hi[i];
    }
    uint64_t msgs(int i) const { return (uint64_t{msgs_hi[i]} << 32) | msgs_lo[i]; }
};

static_assert(offsetof(Endpoint, key) == 64, "line 0 holds what every packet touches");
static_assert(offsetof(Endpoint, window_bits) == 128, "line 1 holds what completion reads");
static_assert(offsetof(Endpoint, src_ip) == 256, "the window's bits fill lines 2 and 3");
static_assert(offsetof(Endpoint, counters) == 320, "line 4: first packet and pairing");
static_assert(offsetof(Endpoint, pending_next) < sizeof(Endpoint), "cold fields fit line 5-6");
static_assert(sizeof(Endpoint) == 448);

}  // namespace insert::state
