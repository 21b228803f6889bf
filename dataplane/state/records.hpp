// Fixed-size telemetry records (SPEC.md section 7) as they leave a worker: plain values,
// no pointers, no allocation, copied by value through the per-worker rings to the exporter
// which encodes them as JSON Lines (dataplane/export/json_records.hpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "dataplane/proto/ip_address.hpp"

namespace insert::state {

using proto::IpAddress;

enum class RecordType : uint8_t { msg, qp, event };

enum class MsgOp : uint8_t { send, write, read, cmp_swap, fetch_add };

enum class MsgStatus : uint8_t { ok, nak_inv, nak_access, nak_op, nak_seq, nak_rnr, incomplete };

enum class EventKind : uint8_t { gap, nak, rnr_nak, fatal_nak, cnp, timeout, pair, unknown_qp };

enum class PairBy : uint8_t { none, host, cm, sport, ip, psn };

enum class TransportFamily : uint8_t { unknown, rc, uc, ud, xrc };

struct MsgRecord {
    IpAddress src_ip;
    IpAddress dst_ip;
    uint32_t dst_qpn = 0;
    uint32_t src_qpn = 0;  // valid iff has_src_qpn (the paired peer's QPN)
    uint32_t psn_first = 0;
    uint32_t psn_last = 0;
    uint32_t imm = 0;  // valid iff has_imm
    uint32_t inv = 0;  // valid iff has_inv (IETH R_Key)
    uint32_t pkts = 0;
    uint32_t rkey = 0;     // valid iff has_reth (WRITE, READ) or atomic
    uint32_t dma_len = 0;  // valid iff has_dma_len
    uint32_t retx_pkts = 0;
    uint32_t naks = 0;
    uint32_t rnr_naks = 0;
    uint64_t bytes = 0;
    uint64_t va = 0;  // valid iff has_va
    uint64_t t_first_ns = 0;
    uint64_t t_last_ns = 0;
    uint64_t t_ack_ns = 0;  // valid iff has_ack (latency_ns = t_ack_ns - t_first_ns)
    MsgOp op = MsgOp::send;
    MsgStatus status = MsgStatus::incomplete;
    bool has_src_qpn = false;
    bool has_imm = false;
    bool has_inv = false;
    bool has_va = false;  // va and rkey
    bool has_dma_len = false;
    bool has_ack = false;
};

// Nine NAK/RNR counters by code, as `naks{seq,rnr,inv,access,op}`.
struct NakCounts {
    uint32_t seq = 0, rnr = 0, inv = 0, access = 0, op = 0;
};

struct QpRecord {
    IpAddress ip;
    IpAddress peer_ip;  // valid iff pair_by != none
    uint32_t qpn = 0;
    uint32_t peer_qpn = 0;
    PairBy pair_by = PairBy::none;
    TransportFamily transport = TransportFamily::unknown;
    bool final = false;
    bool evicted = false;  // final because the endpoint went idle (not exported)
    // Evicted, and no other part of the endpoint is left in its engine (not exported).
    bool endpoint_gone = false;
    uint64_t pkts = 0;
    uint64_t bytes = 0;
    uint64_t msgs[5] = {};  // indexed by MsgOp
    uint64_t dup_pkts = 0;
    uint64_t ooo_pkts = 0;
    uint64_t gaps = 0;
    uint64_t missing = 0;
    NakCounts naks;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    uint64_t t_first_ns = 0;
    uint64_t t_last_ns = 0;
    uint64_t lat_p50_ns = 0;  // the three latency fields are valid iff lat_count > 0
    uint64_t lat_p99_ns = 0;
    uint64_t lat_max_ns = 0;
    uint64_t lat_count = 0;
    // When the first non-CNP packet (the one that set `transport`) came: merge_qp() picks
    // the earliest across an endpoint's parts (not exported).
    uint64_t t_transport_ns = 0;
    // The source of the part a record of one part (an evicted one) describes; the
    // exporter keeps message latencies per part (not exported).
    IpAddress src_ip;
};

struct EventRecord {
    EventKind kind = EventKind::gap;
    uint8_t syndrome = 0;  // nak / rnr_nak / fatal_nak
    IpAddress ip;
    IpAddress peer_ip;  // pair
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t peer_qpn = 0;          // pair
    uint32_t missing = 0;           // gap
    PairBy pair_by = PairBy::none;  // pair
    uint32_t count = 0;             // cnp: CNPs in the event's one-second window
    uint64_t t_ns = 0;
};

struct Record {
    RecordType type = RecordType::msg;
    union {
        MsgRecord msg;
        QpRecord qp;
        EventRecord event;
    };
    constexpr Record() : msg() {}
};

static_assert(std::is_trivially_copyable_v<Record>, "records are copied through rte_rings");
static_assert(sizeof(Record) <= 256, "keep records within four cache lines");

// Where a worker's engine puts its records (the per-worker ring in the pipeline, a vector
// in tests). Called per record, never per packet, so a virtual call is fine.
class RecordSink {
  public:
    virtual ~RecordSink() = default;
    // False when the record could not be queued; the engine counts it in records_dropped.
    virtual bool push(const Record& record) = 0;
};

}  // namespace insert::state
