// The input records the join uses, decoded from JSON Lines into fixed-size structs: the
// dataplane's `msg` and `qp` records (SPEC.md section 7) and insert-trace's host records
// (docs/insert-trace.md). Only the fields docs/correlation.md needs are kept; strings that
// repeat (host names) are interned, short ones (comm) kept inline, pointers as integers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "correlator/input/huge_allocator.hpp"
#include "correlator/input/mac_address.hpp"
#include "dataplane/proto/ip_address.hpp"

namespace insert::correlate {

using Ip = proto::IpAddress;

// Absent JSON values (null or missing) of integer fields.
inline constexpr int64_t kNone = INT64_MIN;

// Operation families (SPEC 7 `op`), which work requests map onto (docs/correlation.md 4).
enum class Op : uint8_t { send, write, read, cmp_swap, fetch_add, count };
inline constexpr std::array<std::string_view, 5> kOpNames = {"SEND", "WRITE", "READ", "CMP_SWAP",
                                                             "FETCH_ADD"};

// SPEC 5 `status`.
enum class MsgStatus : uint8_t { ok, nak_inv, nak_access, nak_op, nak_seq, nak_rnr, incomplete };
inline constexpr std::array<std::string_view, 7> kStatusNames = {
    "ok", "nak_inv", "nak_access", "nak_op", "nak_seq", "nak_rnr", "incomplete"};

// SPEC 3 `pair_by` (none: null).
enum class PairBy : uint8_t { none, host, cm, sport, ip, psn, other };
inline constexpr std::array<std::string_view, 7> kPairByNames = {"",   "host", "cm",   "sport",
                                                                 "ip", "psn",  "other"};

// Where a message's opening packet came from, as insert-dp saw it (`msg` src_mac, ttl,
// port; docs/semantics.md "Messages"): records of an older insert-dp have none (`known`
// false).
inline constexpr uint16_t kNoOriginPort = 0xFFFF;  // port null: a replay
struct PacketOrigin {
    MacAddress mac{};
    uint16_t port = kNoOriginPort;
    uint8_t ttl = 0;
    bool known = false;
    friend bool operator==(const PacketOrigin&, const PacketOrigin&) = default;
    friend auto operator<=>(const PacketOrigin&, const PacketOrigin&) = default;
};

// A dataplane `msg`.
struct WireMsg {
    Ip src_ip;
    Ip dst_ip;
    int64_t src_qpn = kNone;
    uint32_t dst_qpn = 0;
    uint32_t psn_first = 0;
    uint32_t psn_last = 0;
    Op op = Op::send;
    MsgStatus status = MsgStatus::ok;
    bool checked = false;     // live: its security rules (but injected_message) were applied
    bool origin_fed = false;  // live: given to evidence.origin's book (OriginFeed)
    int64_t imm = kNone;
    uint64_t bytes = 0;
    int64_t va = kNone;  // a VA above 2^63 is kept as its two's complement
    int64_t rkey = kNone;
    int64_t dma_len = kNone;
    int64_t t_first = 0;
    int64_t t_last = 0;
    int64_t t_ack = kNone;
    uint32_t pkts = 0;
    uint32_t retx_pkts = 0;
    uint32_t naks = 0;
    uint32_t rnr_naks = 0;
    PacketOrigin origin;
};

// A dataplane `qp` record (the counters the join attributes to applications).
struct WireQp {
    Ip ip;
    Ip peer_ip;
    uint32_t qpn = 0;
    int64_t peer_qpn = kNone;
    PairBy pair_by = PairBy::none;
    bool has_peer_ip = false;
    bool final = false;
    uint64_t pkts = 0;
    uint64_t cnps = 0;
    uint64_t ecn_ce = 0;
    int64_t t_first = 0;
    int64_t t_last = 0;
};

// insert-trace's `cgroup` record: the path of a cgroup id on a host (the name people know a
// tenant by; docs/insert-trace.md). Few per run: kept as text, not interned.
struct CgroupName {
    uint32_t host = 0;  // interned name (HostNames)
    uint64_t id = 0;
    bool has_path = false;
    std::string path;
};

// insert-trace's `tick`: an idle host's clock (host wall time), which moves a live run's
// time on (docs/correlation.md 7); nothing else reads it.
struct HostTick {
    uint32_t host = 0;  // interned name (HostNames)
    int64_t wall = 0;
};

// insert-trace record kinds the join uses.
enum class HostKind : uint8_t {
    create_qp,
    modify_qp,
    destroy_qp,
    reg_mr,
    dereg_mr,
    post_send,
    post_recv,
    poll_cq,
    process_exit,
    lost,
};

// ibv_wr_opcode names as insert-trace prints them, and what the join makes of them.
enum class WrOpcode : uint8_t {
    rdma_write,
    rdma_write_with_imm,
    send,
    send_with_imm,
    rdma_read,
    atomic_cmp_and_swp,
    atomic_fetch_and_add,
    send_with_inv,
    other,  // LOCAL_INV, BIND_MW, TSO, ...: no wire message of SPEC 5
};

// ibv_wc_opcode names: what a completion says it completed.
enum class WcOpcode : uint8_t { send_side, recv, recv_rdma_with_imm };

// QP states of modify_qp (`state`), as far as the join needs them.
enum class QpState : uint8_t { other, rtr, rts };

// IBV_ACCESS_* bits (the reg_mr `access` number, and `qp_access` names).
inline constexpr uint32_t kAccessRemoteWrite = 2;
inline constexpr uint32_t kAccessRemoteRead = 4;
inline constexpr uint32_t kAccessRemoteAtomic = 8;

struct Comm {
    std::array<char, 16> chars{};  // the kernel's comm: at most 15 bytes
    uint8_t len = 0;
    std::string_view view() const { return {chars.data(), len}; }
    friend bool operator==(const Comm& a, const Comm& b) { return a.view() == b.view(); }
    friend auto operator<=>(const Comm& a, const Comm& b) { return a.view() <=> b.view(); }
};

// One insert-trace record. `obj` is the verb's object pointer (qp for QP verbs and
// post_*, mr for MR verbs, cq for poll_cq).
struct HostEvent {
    uint32_t host = 0;  // interned name (HostNames)
    int32_t pid = 0;
    int32_t tid = 0;
    uint32_t qpn = 0;
    int32_t ret = 0;
    HostKind kind = HostKind::create_qp;
    bool has_ip = false;
    Comm comm;
    Ip ip;
    int64_t wall = 0;
    uint64_t cgroup = 0;
    uint64_t obj = 0;
    union {
        struct {
            uint64_t pd;
            bool rc_family;  // RC, UC or XRC_SEND: QPs whose requests are SPEC 5 messages
            bool uc;
        } create;
        struct {
            QpState state;
            bool has_dest_qpn, has_peer_ip, has_sq_psn, has_rq_psn, has_access;
            uint32_t dest_qpn, sq_psn, rq_psn, access;
            Ip peer_ip;
        } modify;
        struct {
            uint64_t pd, addr, length;
            int64_t iova;  // kNone: as addr
            uint32_t access;
            int64_t rkey;  // kNone on failure
        } mr;
        struct {
            uint64_t wr_id;
            uint64_t len;
            int64_t remote_addr, rkey;
            uint32_t chain_index;
            WrOpcode opcode;
            bool signaled;
        } post;
        struct {
            uint64_t wr_id;
            uint32_t byte_len;
            uint16_t status_code;  // ibv_wc_status; 0 = SUCCESS
            WcOpcode opcode;
        } poll;
        struct {
            uint64_t drops;
        } lost;
    } u{};
};
// Two cache lines: millions of them are decoded, sorted and walked (fields ordered so
// that none is padded).
static_assert(sizeof(HostEvent) == 128);

// The record arrays of a run (see huge_allocator.hpp).
using WireMsgs = HugeVector<WireMsg>;
using WireQps = HugeVector<WireQp>;
using HostEvents = HugeVector<HostEvent>;

}  // namespace insert::correlate
