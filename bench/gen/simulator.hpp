// Discrete-event simulation of RoCEv2 hosts, RC/UC connections and the network around one
// observation point. Packets reach the observer in time order and are handed to an
// ObservedSink there (the pcap writer and the truth observer), so nothing is buffered
// beyond the packets in flight.
#pragma once

#include <cstdint>
#include <ranges>
#include <unordered_map>
#include <vector>

#include "bench/gen/attack_plan.hpp"
#include "bench/gen/event_queue.hpp"
#include "bench/gen/host_events.hpp"
#include "bench/gen/host_layout.hpp"
#include "bench/gen/huge_vector.hpp"
#include "bench/gen/rng.hpp"
#include "bench/gen/scenario.hpp"
#include "bench/gen/sim_packet.hpp"

namespace insert::gen {

template <typename V>
class FlatMap;

// Simulation time 0 is this capture timestamp (2023-11-14), not 1970, as in a real capture.
constexpr uint64_t kEpochNs = 1'700'000'000'000'000'000ull;

class ObservedSink {
  public:
    virtual ~ObservedSink() = default;
    virtual void observe(const SimPacket& pkt) = 0;
    // Hints, for speed only: `pkt` will be observed soon; connection `conn` will post soon.
    virtual void prefetch(const SimPacket& /*pkt*/) {}
    virtual void prefetch_conn(uint32_t /*conn*/) {}
};

// One RDMA operation as the requester posted it (the generator's ground knowledge). Written
// at set-up and, psn_first, when posted; read-only after that - the truth thread reads it
// while the simulator runs, and what changes as the simulation goes on lives apart, in the
// simulator's MsgProgress, so that the two threads do not pull its lines back and forth.
struct MsgInfo {
    // 64 bytes, widest first: one cache line per message in the (2 MiB-aligned) table.
    uint64_t va = 0;
    uint64_t post_ns = 0;
    uint64_t atomic_orig = 0;
    uint32_t conn = 0;
    uint32_t index = 0;  // within its connection
    uint32_t len = 0;
    uint32_t imm_value = 0;
    uint32_t inv_rkey = 0;
    uint32_t rkey = 0;
    uint32_t psn_first = 0;  // assigned when posted
    uint32_t npsn = 1;       // PSNs the operation occupies (READ: its responses)
    uint32_t npkts = 1;      // request packets (READ and atomics: 1)
    OpType op = OpType::write;
    bool imm = false;
    bool inv = false;
    // Responder behaviour chosen by the scenario (RNR NAKs: the simulator's MsgProgress).
    bool access_error = false;
};
static_assert(sizeof(MsgInfo) == 64);

struct ConnInfo {
    ConnSpec spec;
    uint32_t qpn_a = 0, qpn_b = 0;
    uint32_t psn_a = 0, psn_b = 0;
    uint16_t sport_req = 0, sport_resp = 0;
    uint32_t first_msg = 0, num_msgs = 0;  // its slice of the message table
    uint32_t cm_id_a = 0, cm_id_b = 0;
};

struct SimStats {
    uint64_t events = 0;
    uint64_t sent = 0;  // packets put on a wire (incl. lost ones)
    uint64_t lost_before = 0;
    uint64_t lost_after = 0;
    uint64_t retransmitted = 0;
    uint64_t timeouts = 0;
    uint64_t end_ns = 0;
};

class Simulator {
  public:
    Simulator(const Scenario& scenario, uint64_t seed);
    // Runs to completion, handing every observed packet to `sink` in capture order.
    void run(ObservedSink& sink) { run_for(sink, UINT64_MAX); }
    // The same in pieces: runs until `sink` has been handed `packets` more packets (or one
    // more: an event observes up to two), or to completion; true once complete. A later
    // call (with any sink) carries on where this one stopped.
    bool run_for(ObservedSink& sink, uint64_t packets);
    // Before run(): also record the moments the host traces need (host_events.hpp).
    void record_host_events();

    const HugeVector<MsgInfo>& messages() const { return msgs_; }
    const HugeVector<ConnInfo>& conns() const { return conn_info_; }
    const SimStats& stats() const { return stats_; }
    const HostLayout& layout() const { return layout_; }
    // By message uid; empty unless record_host_events() was called.
    const HugeVector<MsgHostEvents>& host_events() const { return host_ev_; }
    // The attacks' packets injected at the observation point (their messages follow every
    // connection's slice in messages()).
    const std::vector<Injection>& injections() const { return injections_; }

  private:
    enum class Ev : uint8_t {
        post,
        tx,
        observe,
        release,
        deliver,
        ack_timer,
        retx_timer,
        rnr_resume,
        rate_recover,
        inject
    };
    struct Event {
        uint32_t a;
        uint32_t b;
        Ev type;
    };
    struct HostState {
        uint64_t tx_free_ns = 0;
        uint64_t rx_free_ns = 0;  // Scenario::receiver_queue: its link's FIFO is busy until
        uint32_t next_qpn = 0;
        uint32_t ud_qpn = 0;
    };
    // Posted, not yet completed messages of one QP. A connection's messages have consecutive
    // uids and are posted in order, so the queue is a range of uids (no allocation).
    struct SendQueue {
        uint32_t head = 0, tail = 0;
        bool empty() const { return head == tail; }
        std::size_t size() const { return tail - head; }
        uint32_t front() const { return head; }
        void pop_front() { ++head; }
        void push_back(uint32_t uid) {
            if (empty()) head = uid;
            tail = uid + 1;
        }
        void clear() { head = tail; }
        auto items() const { return std::views::iota(head, tail); }
    };
    // A message's requester progress and scripted RNR NAKs: simulator-only (see MsgInfo).
    struct MsgProgress {
        uint32_t sent_pkts = 0;  // packets sent at least once (to mark retransmissions)
        uint32_t resp_next = 0;  // READ: next response PSN the requester accepts
        bool done = false;
        uint8_t rnr_remaining = 0;
    };
    // Everything the events of one connection read and write, in two aligned cache lines:
    // on `large` (50k connections) nearly every event's connection state is a cache miss,
    // and ConnState (120 B) plus ConnInfo (88 B), unaligned, were ~5 lines per event. The
    // fields of ConnInfo the events need are copied here at set-up (read-only after it);
    // what only impaired scenarios touch is in ConnCold.
    struct alignas(64) ConnState {
        // Requester.
        uint64_t retx_deadline = 0;
        uint64_t next_tx_ns = 0;
        SendQueue sq;
        uint32_t next_psn = 0;
        uint32_t rate_div = 1;
        // Responder.
        uint64_t resp_not_before = 0;
        uint32_t e_psn = 0;
        uint32_t msn = 0;
        uint32_t ack_gen = 0;
        uint32_t ack_psn = 0;
        uint32_t acks_sent = 0;
        // Observer: a packet of each direction held back to be swapped.
        uint32_t held[2] = {kNone, kNone};
        uint32_t held_gen[2] = {0, 0};
        // From ConnInfo.
        uint32_t qpn_a = 0, qpn_b = 0;
        uint32_t msgs_end = 0;  // first_msg + num_msgs
        uint32_t mtu = 0;
        uint16_t host_a = 0, host_b = 0;
        uint16_t sport_req = 0, sport_resp = 0;
        bool uc = false;
        // Requester.
        bool paused = false;  // waiting out an RNR NAK
        bool error = false;   // after a fatal NAK
        bool retx_armed = false;
        bool retx_event_pending = false;  // one timer event in the queue per QP at most
        // Responder.
        bool nak_state = false;
        bool resp_error = false;
        bool ack_pending = false;
        bool ack_psn_valid = false;
        // CM: work requests wait for the RTU (an application posts after rdma_connect()).
        bool cm_ready = true;
    };
    static_assert(sizeof(ConnState) == 128);
    // Per connection, touched only by RNR NAKs, CNPs and CM.
    struct ConnCold {
        uint32_t rnr_gen = 0;
        uint32_t rnr_psn = 0;
        uint32_t rate_gen = 0;
        uint32_t deferred_post = kNone;  // uid
        uint64_t last_cnp_ns = 0;
        bool cnp_sent = false;
    };

    // setup() and its steps (simulator.cpp says in which order they draw random numbers).
    void setup();
    void assign_host_qpns();
    uint32_t draw_peer(uint32_t a);
    std::vector<ConnSpec> connection_specs();
    ConnSpec random_connection();
    bool has_workload(const std::vector<ConnSpec>& specs, std::size_t c) const;
    void plan_layout(const std::vector<ConnSpec>& specs,
                     const std::vector<MessageSpec>& attack_msgs);
    void open_connections(const std::vector<ConnSpec>& specs);
    void assign_qpns(uint32_t c);
    void assign_sports(ConnInfo& ci, FlatMap<bool>& used_sports);
    void init_conn_state(uint32_t c);
    void build_messages(const std::vector<ConnSpec>& specs,
                        const std::vector<MessageSpec>& attack_msgs);
    void draw_workload(bool uc, double total_weight);
    const OpWeight& pick_op(double total_weight);
    void append_explicit(const std::vector<const MessageSpec*>& explicit_msgs);
    void finish_connection(uint32_t c);
    void delay_reused_qpns(uint32_t c);
    void draw_message_values(uint32_t c, uint32_t k);
    void schedule_attacks();
    void apply_targets();
    uint64_t extra_frames_end() const;
    void send_ud_frame(uint64_t span_end);
    void inject_frame(PacketClass cls, uint8_t variant, uint64_t span_end);

    void prefetch(const Event& e);
    void schedule(uint64_t t, Ev type, uint32_t a, uint32_t b = 0);
    uint32_t alloc_packet();
    void free_packet(uint32_t idx);
    SimPacket& pkt(uint32_t idx) { return pool_[idx]; }

    uint32_t frame_bytes(const SimPacket& p) const;
    void transmit(uint32_t idx, uint64_t desired);  // through the sender's NIC
    void on_tx(uint32_t idx);
    void on_observe(uint32_t idx);
    void emit(uint32_t idx);
    void after_observer(uint32_t idx);
    void on_deliver(uint32_t idx);

    // Requester.
    void on_post(uint32_t conn, uint32_t uid);
    void send_message_from(uint32_t conn, uint32_t uid, uint32_t from_pkt);
    void go_back_n(uint32_t conn, uint32_t psn);
    void complete_before(uint32_t conn, uint32_t psn, bool inclusive);
    void pop_done(uint32_t conn);
    void arm_retx(uint32_t conn, bool restart);
    // What the delivery handlers read of a packet: its pool slot is freed (and may be
    // reused) before they run, and a copy of these few fields is cheaper than of the
    // 184-byte SimPacket.
    struct Delivery {
        uint32_t msg_uid, index, psn;
        uint8_t opcode, syndrome, ecn;
        bool ack_req;
    };
    void on_response(uint32_t conn, const Delivery& p);
    void on_retx_timer(uint32_t conn, uint32_t gen);
    // Responder.
    void on_request(uint32_t conn, const Delivery& p);
    void queue_response(uint32_t conn, uint32_t idx, uint64_t desired);
    void send_ack(uint32_t conn);
    void send_nak(uint32_t conn, uint8_t syndrome, uint32_t psn);
    void send_read_responses(uint32_t conn, const MsgInfo& m);
    void send_atomic_ack(uint32_t conn, const MsgInfo& m);
    void maybe_send_cnp(uint32_t conn);
    // CM and extra traffic.
    void send_cm(uint32_t conn, CmKind kind, uint64_t desired);
    void on_inject(uint32_t injection);
    // A spoofed injection waits this long at a time for its peer to finish; raw packets go
    // from this UDP source port (the attack tools' default, docs/demo.md).
    static constexpr uint64_t kInjectRetryNs = 10'000;
    static constexpr uint16_t kInjectSport = 4791;

    // Host events (only while host_ev_ is allocated).
    void note_done(uint32_t uid, WcStatus status) {
        if (host_ev_.empty()) return;
        host_ev_[uid].done_ns = now_;
        host_ev_[uid].status = status;
    }
    void note_uc_request(uint32_t conn, const Delivery& p);

    SimPacket& new_response(uint32_t conn, uint32_t& idx, uint8_t opcode, uint32_t psn);
    bool target(uint32_t uid, uint32_t pkt_index, Action action) const;

    const Scenario& sc_;
    uint64_t seed_;
    Rng rng_;
    HostLayout layout_;
    uint64_t rate_mbps_ = 100'000;
    std::vector<HostState> hosts_;
    HugeVector<ConnInfo> conn_info_;
    HugeVector<ConnState> conn_;
    HugeVector<ConnCold> cold_;
    HugeVector<MsgInfo> msgs_;
    HugeVector<MsgProgress> progress_;  // by message uid
    HugeVector<SimPacket> pool_;
    std::vector<uint32_t> free_;
    EventQueue<Event> events_;
    uint64_t now_ = 0;
    ObservedSink* sink_ = nullptr;
    uint64_t emitted_ = 0;  // packets handed to a sink so far
    // Explicit per-packet targets: key (uid << 24 | pkt) -> Action bit mask.
    std::unordered_map<uint64_t, uint32_t> pkt_targets_;
    // ACK drops: key (conn << 32 | ack index) -> Action bit mask.
    std::unordered_map<uint64_t, uint32_t> ack_targets_;
    SimStats stats_;
    HugeVector<MsgHostEvents> host_ev_;
    // UC responders (host events only): the message whose packets are arriving in order, and
    // the index of the packet expected next.
    std::vector<std::pair<uint32_t, uint32_t>> uc_rx_;
    AttackPlan attacks_;
    std::vector<Injection> injections_;
};

}  // namespace insert::gen
