// Fixed-size telemetry records (SPEC.md section 7) as they leave a worker: plain values,
// no pointers, no allocation, copied by value through the per-worker rings to the exporter
// which encodes them as JSON Lines (dataplane/export/json_records.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "dataplane/proto/ip_address.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/source_sketch.hpp"

namespace insert::state {

using proto::IpAddress;

// `mark` is not exported: an engine's word that its event windows before a time are all
// pushed (WindowMark), which the exporter needs to merge the workers' windows.
enum class RecordType : uint8_t { msg, qp, event, mark };

enum class MsgOp : uint8_t { send, write, read, cmp_swap, fetch_add };

enum class MsgStatus : uint8_t { ok, nak_inv, nak_access, nak_op, nak_seq, nak_rnr, incomplete };

enum class EventKind : uint8_t { gap, nak, rnr_nak, fatal_nak, cnp, timeout, pair, unknown_qp };

// Events of every kind but `pair` are counted per destination endpoint, kind and one-second
// window, with their distinct sources (docs/semantics.md "Events"): a spray from any number
// of sources gives one record a second. A `pair` event stands for a connection.
constexpr bool windowed(EventKind kind) {
    return kind != EventKind::pair;
}
constexpr uint64_t kEventWindowNs = 1'000'000'000;

enum class PairBy : uint8_t { none, host, cm, sport, ip, psn };

enum class TransportFamily : uint8_t { unknown, rc, uc, ud, xrc };

// A frame's Ethernet source and IPv4 TTL / IPv6 hop limit, in 7 bytes that are copied as
// one (the open message's, then its record's).
struct FrameOrigin {
    std::array<uint8_t, 6> src_mac{};
    uint8_t ttl = 0;
};
static_assert(sizeof(FrameOrigin) == 7);

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
    // Where the packet that opened it came from (docs/semantics.md "Messages"), and the
    // port it arrived on (proto::kNoPort: none, a replay).
    FrameOrigin origin;
    uint16_t port = proto::kNoPort;
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

// A windowed kind's record: the events of one destination endpoint (ip, qpn) and kind in
// one window; the first event's time, PSN and syndrome, how many, their distinct sources.
// A `pair` record: one pair.
struct EventRecord {
    EventKind kind = EventKind::gap;
    uint8_t syndrome = 0;           // nak / rnr_nak / fatal_nak: the first event's
    PairBy pair_by = PairBy::none;  // pair
    uint32_t qpn = 0;
    uint32_t psn = 0;  // the first event's
    IpAddress ip;
    IpAddress peer_ip;      // pair
    uint32_t peer_qpn = 0;  // pair
    // Windowed kinds: seconds since the epoch of the window, the number of events in it
    // (a window is one second: 2^32 events of one endpoint and kind cannot fit in it).
    uint32_t window = 0;
    uint32_t count = 0;
    uint64_t missing = 0;    // gap: PSNs missing, summed over the window's gaps
    uint64_t t_ns = 0;       // the first event's time
    uint64_t t_last_ns = 0;  // windowed kinds: the last event's time
    SourceSketch sources;    // windowed kinds: the distinct source IPs of the events
};

// Every event window of this engine before `events` (seconds since the epoch; before
// `timeouts` for `timeout` events) has been pushed: the exporter may write a window once
// every worker has passed it.
struct WindowMark {
    uint32_t events = 0;
    uint32_t timeouts = 0;
};

struct Record {
    RecordType type = RecordType::msg;
    union {
        MsgRecord msg;
        QpRecord qp;
        EventRecord event;
        WindowMark mark;
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
