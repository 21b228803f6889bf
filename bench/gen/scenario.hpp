// A scenario: hosts, connections, the work they do and what the network does to it.
// Built-in scenarios and JSON files (docs/insert-gen.md) both produce this struct; the
// simulator reads nothing else.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/proto/ip_address.hpp"

namespace insert::gen {

// Same order as SPEC's `msgs{SEND,WRITE,READ,CMP_SWAP,FETCH_ADD}`.
enum class OpType : uint8_t { send, write, read, cmp_swap, fetch_add };
constexpr std::size_t kOpTypes = 5;
const char* op_name(OpType op);

enum class SportPolicy : uint8_t {
    symmetric,  // mlx5: one port per connection, both directions
    per_qp,     // Soft-RoCE: each sender QP has its own port
    fixed,      // every RoCE packet uses `fixed_sport`
};

enum class ConnTransport : uint8_t { rc, uc };

struct HostSpec {
    proto::IpAddress ip;
    std::vector<uint16_t> vlans;  // VLAN IDs, outer first (0, 1 or 2 tags)
};

struct ConnSpec {
    uint32_t a = 0;  // requester host index
    uint32_t b = 1;  // responder host index
    ConnTransport transport = ConnTransport::rc;
    uint32_t mtu = 1024;
    std::optional<uint32_t> psn_a;  // requester's starting PSN (random when absent)
    std::optional<uint32_t> psn_b;  // responder's starting PSN (carried in the CM REP)
    std::optional<uint32_t> qpn_a;
    std::optional<uint32_t> qpn_b;
    bool cm = false;       // CM REQ/REP/RTU exchanged (and observed) before the first request
    bool workload = true;  // false: only its explicit `messages` (a flow of its own kind)
};

// Connections drawn at random between random host pairs (mixed_ops, large).
struct RandomConnections {
    uint32_t count = 0;
    double uc_fraction = 0.0;
    uint32_t mtu_min = 256, mtu_max = 4096;  // powers of two in this range
    double cm_fraction = 0.0;                // share of connections with an observed CM exchange
    double near_wrap_fraction = 0.0;         // starting PSNs a few packets below 2^24
};

struct OpWeight {
    OpType op = OpType::write;
    double weight = 1.0;
    uint32_t min_len = 0, max_len = 4096;
    double imm = 0.0;  // probability of immediate data (SEND, WRITE)
    double inv = 0.0;  // probability of invalidate (SEND without imm)
};

// Every connection posts `msgs_per_conn` messages, `gap_ns` apart (+ jitter).
struct Workload {
    uint32_t msgs_per_conn = 0;
    uint64_t start_ns = 10'000;
    uint64_t gap_ns = 20'000;
    uint64_t jitter_ns = 0;
    std::vector<OpWeight> ops;
};

// One message posted at a given time (hand-checkable tests).
struct MessageSpec {
    uint32_t conn = 0;
    OpType op = OpType::write;
    uint32_t len = 0;
    uint64_t at_ns = 0;
    bool imm = false;
    bool inv = false;
};

enum class Action : uint8_t {
    drop_before,      // request packet lost before the observer (first transmission)
    drop_after,       // request packet lost after the observer (first transmission)
    swap,             // request packet overtaken by the next packet of its flow at the observer
    ce_mark,          // request packet CE-marked upstream of the observer
    rnr,              // responder answers the message's first arrival with `count` RNR NAKs
    access_error,     // responder answers the message with NAK remote access error
    drop_ack_before,  // the responder's `msg`-th ACK (0-based) lost before the observer
    drop_ack_after,   // ... lost after the observer
};

struct TargetSpec {
    Action action = Action::drop_before;
    uint32_t conn = 0;
    uint32_t msg = 0;  // message index within the connection (ACK index for drop_ack_*)
    uint32_t pkt = 0;  // packet index within the message
    uint32_t count = 1;
};

struct Impairments {
    // Random impairments on first transmissions of SEND/WRITE request packets.
    double loss_before = 0.0;
    double loss_after = 0.0;
    double swap = 0.0;
    double ce_mark = 0.0;          // on every request packet (first transmission)
    double ack_loss_before = 0.0;  // on ACKs
    uint32_t spray_paths = 1;      // requests spread over N paths...
    uint64_t spray_step_ns = 0;    // ... path k adds k * step
    std::vector<TargetSpec> targets;
};

struct Timing {
    uint64_t ack_delay_ns = 2'000;      // responder ACK coalescing window
    uint64_t responder_delay_ns = 300;  // NAK generation
    uint64_t read_delay_ns = 1'500;     // first READ response
    uint64_t atomic_delay_ns = 1'000;
    uint64_t retx_timeout_ns = 500'000;  // requester local ACK timeout
    uint64_t rnr_timer_ns = 40'000;      // wait after an RNR NAK
    uint64_t cnp_interval_ns = 50'000;   // at most one CNP per QP per interval
    uint64_t cnp_delay_ns = 1'000;
    uint64_t rate_recovery_ns = 55'000;  // DCQCN-like: halve the divider after this
    uint64_t cm_delay_ns = 30'000;       // CM REQ -> REP -> RTU turnaround
    uint64_t swap_hold_ns = 20'000;      // a swapped packet waits at most this long
};

struct UdFlows {
    uint32_t count = 0;  // UD SEND packets between random host pairs
    uint32_t max_len = 1024;
};

// What a lost host-trace record is (host_trace.lost_records): the work request's post_send,
// its send completion, the responder's post_recv or its receive completion.
enum class TraceVerb : uint8_t { post_send, poll_cq, post_recv, poll_cq_recv };

struct TraceLoss {
    uint32_t conn = 0;
    uint32_t msg = 0;  // message index within the connection
    TraceVerb verb = TraceVerb::post_send;
};

// The simulated hosts as insert-trace would see them (docs/insert-gen.md "Host traces").
// processes_per_host, mrs_per_process and qpn_reuse shape the traffic itself (which
// process owns a QP decides the MRs a WRITE/READ/atomic targets, hence its va/rkey; a
// reused QPN delays its connection), so they apply whether or not host traces are
// written; the rest only shapes the traces.
struct HostTraceSpec {
    int64_t clock_offset_max_ns = 2'000'000;  // theta_h uniform in [-max, max]; host 0: 0
    std::vector<int64_t> clock_offsets_ns;    // one per host, instead of drawn (if given)
    uint64_t post_to_tx_ns = 1'000;           // the application's post_send -> the NIC takes the WR
    uint64_t post_to_tx_jitter_ns = 1'000;
    uint64_t poll_delay_ns = 1'500;  // the completion at the NIC -> the application polls it
    uint64_t poll_jitter_ns = 3'000;
    uint64_t setup_lead_ns = 200'000;  // create_qp this long before the QP's first traffic
    uint32_t unsignaled_every = 1;     // every k-th WR (and a QP's last) is signaled
    double loss = 0.0;                 // data-path records (post_*, poll_cq) lost at random
    std::vector<TraceLoss> lost_records;
    std::vector<uint32_t> untraced_hosts;  // no tracer at all
    std::vector<uint32_t> datapath_off;    // control path only (insert-trace --datapath off)
    double exit_without_destroy = 0.25;    // processes whose QPs end at process_exit
    uint32_t processes_per_host = 3;
    uint32_t tenants = 2;  // cgroups
    uint32_t mrs_per_process = 3;
    double qpn_reuse = 0.0;  // connections taking the QPN of an earlier, destroyed QP
    uint64_t reuse_gap_ns = 1'000'000;

    // The largest |theta_h| the hosts can have.
    uint64_t max_offset_ns() const {
        uint64_t m = static_cast<uint64_t>(clock_offset_max_ns);
        if (!clock_offsets_ns.empty()) {
            m = 0;
            for (int64_t o : clock_offsets_ns) m = std::max<uint64_t>(m, o < 0 ? -o : o);
        }
        return m;
    }
    // How long a QP lives beyond its traffic on either side: more than any error of a
    // correlator's clock estimate (at most the offset itself, for a host whose offset has
    // no bound), so that the correlator's view of which QP was alive is never in doubt.
    uint64_t life_margin_ns() const { return 2 * max_offset_ns() + 50'000; }
};

// An attack (attack_plan.hpp, docs/insert-gen.md "Attacks"): what an attacker host does to
// the responder of connection `victim` - its process (the rkey attacks, over connections of
// their own that the victim accepts) or its QP (the injections at the observation point).
enum class AttackKind : uint8_t {
    rkey_guess,         // `count` WRITEs with rkeys no MR of the victim has, posted together
    stale_rkey,         // a WRITE with the rkey of an MR the victim deregistered
    out_of_bounds,      // a WRITE under a valid rkey that runs past its MR's end
    access_denied,      // a WRITE into an MR registered without REMOTE_WRITE
    peer_mismatch,      // a WRITE from the attacker's address to the victim QP
    spoofed_injection,  // a WRITE from the victim QP's peer address at the PSN it expects
    unowned_qp,         // a WRITE to a QPN of the victim's host that no QP has
    // Spoofed from the victim QP's peer at the PSN it expects, never completing: a WRITE
    // First (`len` > the path MTU) whose Middle/Last never come, and a WRITE Only the
    // victim's NIC drops, never acknowledged. Both `incomplete` on the wire.
    spoofed_first,
    spoofed_unacked,
};
constexpr std::size_t kAttackKinds = 9;
const char* attack_kind_name(AttackKind k);

struct AttackSpec {
    AttackKind kind = AttackKind::rkey_guess;
    uint32_t attacker = 0;  // host index (spoofed_*: the host sending, with the peer's address)
    uint32_t victim = 0;    // connection index: its responder (process, QP, host)
    uint64_t at_ns = 0;
    uint32_t count = 1;           // rkey_guess: guesses
    uint32_t len = 64;            // each WRITE's length
    std::optional<uint32_t> qpn;  // unowned_qp: the QPN (else one no QP of the host has)
};

struct Scenario {
    std::string name;
    std::string description;
    double rate_gbps = 100.0;
    uint64_t prop_pre_ns = 300;   // requester/responder -> observer
    uint64_t prop_post_ns = 700;  // observer -> receiver
    // The receiver's link as a FIFO at the link rate after the observer (a switch's egress
    // port toward it): packets to one host from several senders queue there, so traffic
    // into an incast's receiver waits behind the incast (off: only each sender's NIC
    // serializes).
    bool receiver_queue = false;
    Timing timing;
    std::vector<HostSpec> hosts;
    SportPolicy sport_policy = SportPolicy::symmetric;
    uint16_t fixed_sport = 49152;
    std::vector<ConnSpec> conns;
    RandomConnections random_conns;
    Workload workload;
    std::vector<MessageSpec> messages;
    Impairments imp;
    UdFlows ud;
    uint32_t background = 0;  // non-RoCE frames (UDP other ports, TCP, ARP, IPv4 fragments)
    // Malformed UDP-4791 frames: length_mismatch, truncated (< 12 B), reserved_opcode,
    // truncated (negative payload_len).
    std::array<uint32_t, 4> malformed{};
    HostTraceSpec host_trace;
    std::vector<AttackSpec> attacks;
};

// Returns an error message naming the offending field, or empty when valid.
std::string validate(const Scenario& s);

}  // namespace insert::gen
