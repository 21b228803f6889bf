#include "bench/gen/simulator.hpp"

#include <algorithm>
#include <cmath>

#include "bench/gen/flat_map.hpp"
#include "bench/gen/prefault.hpp"
#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::gen {

namespace {

using proto::psn_add;
using proto::psn_newer;
using proto::psn_not_older;
namespace op = proto::op;

// Ethernet preamble + SFD + inter-frame gap: what a frame costs on the wire beyond its bytes.
constexpr uint32_t kWireOverheadBytes = 20;
// CM MADs travel as UD SEND Only to QP 1 with this Q_Key (IBTA 16.7); a MAD is 256 B.
constexpr uint32_t kCmQkey = 0x80010000;
constexpr uint32_t kMadLen = 256;
constexpr uint32_t kUdQkey = 0x1111C0DE;
constexpr uint32_t kMaxRateDivider = 16;  // CNP reaction floor: 1/16 of the link rate
constexpr uint8_t kRnrTimerCode = 0x0E;   // encoded RNR timer (IBTA table 45), informative

// Soft-RoCE's source port: 0xC000 + 14 bits of hash_32(qpn) (rxe_qp.c).
uint16_t rxe_sport(uint32_t qpn) {
    return static_cast<uint16_t>(0xC000 | ((qpn * 0x61C88647u) >> (32 - 14)));
}

bool is_send_write(OpType o) {
    return o == OpType::send || o == OpType::write;
}

uint32_t packets_for(uint32_t len, uint32_t mtu) {
    return len == 0 ? 1 : (len + mtu - 1) / mtu;
}

uint32_t action_bit(Action a) {
    return 1u << static_cast<unsigned>(a);
}

uint8_t request_opcode(OpType o, proto::Position pos, bool imm, bool inv, bool uc) {
    using proto::Position;
    uint8_t code = 0;
    if (o == OpType::send) {
        switch (pos) {
            case Position::first:
                code = op::kSendFirst;
                break;
            case Position::middle:
                code = op::kSendMiddle;
                break;
            case Position::last:
                code = imm ? op::kSendLastImm : inv ? op::kSendLastInv : op::kSendLast;
                break;
            case Position::only:
                code = imm ? op::kSendOnlyImm : inv ? op::kSendOnlyInv : op::kSendOnly;
                break;
        }
    } else {
        switch (pos) {
            case Position::first:
                code = op::kWriteFirst;
                break;
            case Position::middle:
                code = op::kWriteMiddle;
                break;
            case Position::last:
                code = imm ? op::kWriteLastImm : op::kWriteLast;
                break;
            case Position::only:
                code = imm ? op::kWriteOnlyImm : op::kWriteOnly;
                break;
        }
    }
    return uc ? static_cast<uint8_t>(code + op::kUcBase) : code;
}

// Stable sort by post time. A connection's slice is usually short and nearly sorted (post i
// at start + i * gap + jitter): an insertion sort, where std::stable_sort allocated and
// freed a buffer per connection (50k times on `large`, in the serial set-up).
void sort_by_post_time(MsgInfo* m, std::size_t n) {
    constexpr std::size_t kInsertionMax = 64;
    if (n > kInsertionMax) {
        std::stable_sort(m, m + n,
                         [](const MsgInfo& x, const MsgInfo& y) { return x.post_ns < y.post_ns; });
        return;
    }
    for (std::size_t i = 1; i < n; ++i) {
        if (m[i].post_ns >= m[i - 1].post_ns) continue;
        const MsgInfo moving = m[i];
        std::size_t j = i;
        for (; j > 0 && m[j - 1].post_ns > moving.post_ns; --j) m[j] = m[j - 1];
        m[j] = moving;
    }
}

proto::Position position_of(uint32_t i, uint32_t n) {
    if (n == 1) return proto::Position::only;
    if (i == 0) return proto::Position::first;
    return i + 1 == n ? proto::Position::last : proto::Position::middle;
}

double op_weight_sum(const Workload& w) {
    double sum = 0;
    for (const OpWeight& o : w.ops) sum += o.weight;
    return sum;
}

}  // namespace

Simulator::Simulator(const Scenario& scenario, uint64_t seed)
    : sc_(scenario), seed_(seed), rng_(seed ^ 0x494E53455254ull), attacks_(scenario, seed) {
    rate_mbps_ = static_cast<uint64_t>(std::llround(sc_.rate_gbps * 1000.0));
    if (rate_mbps_ == 0) rate_mbps_ = 1;
    setup();
}

void Simulator::schedule(uint64_t t, Ev type, uint32_t a, uint32_t b) {
    events_.push(std::max(t, now_), Event{a, b, type});
}

uint32_t Simulator::alloc_packet() {
    if (!free_.empty()) {
        const uint32_t idx = free_.back();
        free_.pop_back();
        pool_[idx] = SimPacket{};
        return idx;
    }
    pool_.emplace_back();
    return static_cast<uint32_t>(pool_.size() - 1);
}

void Simulator::free_packet(uint32_t idx) {
    free_.push_back(idx);
}

// The set-up draws from rng_ in this order, which must not change (a scenario's bytes are a
// function of its seed): the hosts' QPNs, the random connections, each connection's PSNs,
// ports and CM ids, every workload message, each connection's per-message values and CM
// REQ, then the UD, background and malformed frames. The host layout and the attacks draw
// from streams of their own.
void Simulator::setup() {
    assign_host_qpns();
    const std::vector<ConnSpec> specs = connection_specs();
    const std::vector<MessageSpec>& attack_msgs = attacks_.messages();
    plan_layout(specs, attack_msgs);
    open_connections(specs);

    msgs_.reserve(specs.size() * std::size_t{sc_.workload.msgs_per_conn} + sc_.messages.size() +
                  attack_msgs.size() + attacks_.injected_messages());
    // Its pages, zeroed by the kernel on first touch, are faulted in on the idle core while
    // this one fills them (joined at the end of the set-up).
    const BackgroundFault fault_msgs(msgs_.data(), msgs_.capacity() * sizeof(MsgInfo));
    build_messages(specs, attack_msgs);
    for (uint32_t c = 0; c < specs.size(); ++c) finish_connection(c);
    schedule_attacks();
    progress_.resize(msgs_.size());
    apply_targets();

    const uint64_t span_end = extra_frames_end();
    for (uint32_t i = 0; i < sc_.ud.count && sc_.hosts.size() >= 2; ++i) send_ud_frame(span_end);
    for (uint32_t i = 0; i < sc_.background; ++i)
        inject_frame(PacketClass::background, static_cast<uint8_t>(i % kBackgroundKinds), span_end);
    for (uint8_t kind = 0; kind < kMalformedKinds; ++kind)
        for (uint32_t i = 0; i < sc_.malformed[kind]; ++i)
            inject_frame(PacketClass::malformed, kind, span_end);
}

// Each host numbers its QPs up from a random start; the first is its UD QP.
void Simulator::assign_host_qpns() {
    hosts_.resize(sc_.hosts.size());
    for (HostState& h : hosts_) {
        h.next_qpn = static_cast<uint32_t>(rng_.between(0x40, 0x7FFF)) * 4;
        h.ud_qpn = h.next_qpn++;
    }
}

// A random host other than `a`, of its address family (validate() guarantees one exists
// whenever random connections or UD frames ask for one).
uint32_t Simulator::draw_peer(uint32_t a) {
    uint32_t b;
    do {
        b = static_cast<uint32_t>(rng_.between(0, sc_.hosts.size() - 1));
    } while (b == a || sc_.hosts[b].ip.is_v4() != sc_.hosts[a].ip.is_v4());
    return b;
}

// The scenario's connections, its random ones, then the rkey attacks' connections (after
// every scenario connection: attack_plan.hpp).
std::vector<ConnSpec> Simulator::connection_specs() {
    std::vector<ConnSpec> specs = sc_.conns;
    for (uint32_t i = 0; i < sc_.random_conns.count; ++i) specs.push_back(random_connection());
    if (!attacks_.empty()) attacks_.add_connections(specs);
    return specs;
}

ConnSpec Simulator::random_connection() {
    const RandomConnections& rc = sc_.random_conns;
    ConnSpec c;
    c.a = static_cast<uint32_t>(rng_.between(0, sc_.hosts.size() - 1));
    c.b = draw_peer(c.a);
    c.transport = rng_.chance(rc.uc_fraction) ? ConnTransport::uc : ConnTransport::rc;
    // A power of two from mtu_min to mtu_max.
    const uint32_t steps = static_cast<uint32_t>(std::log2(rc.mtu_max / rc.mtu_min));
    c.mtu = rc.mtu_min << rng_.between(0, steps);
    c.cm = c.transport == ConnTransport::rc && rng_.chance(rc.cm_fraction);
    if (rng_.chance(rc.near_wrap_fraction))
        c.psn_a = static_cast<uint32_t>(proto::kPsnMask - rng_.between(0, 6));
    return c;
}

// Workload messages go to the scenario's connections (not to an attack's), except those
// that carry only their explicit messages.
bool Simulator::has_workload(const std::vector<ConnSpec>& specs, std::size_t c) const {
    return specs[c].workload && c < sc_.conns.size() + sc_.random_conns.count;
}

// Processes, their MRs and QPN reuse (host_layout.hpp): from streams of their own, before
// any message is drawn, from the number of messages of each connection.
void Simulator::plan_layout(const std::vector<ConnSpec>& specs,
                            const std::vector<MessageSpec>& attack_msgs) {
    const uint32_t per_conn = op_weight_sum(sc_.workload) > 0 ? sc_.workload.msgs_per_conn : 0;
    std::vector<uint32_t> counts(specs.size(), per_conn);
    for (std::size_t c = 0; c < specs.size(); ++c)
        if (!has_workload(specs, c)) counts[c] = 0;
    for (const MessageSpec& ms : sc_.messages) ++counts[ms.conn];
    for (const MessageSpec& ms : attack_msgs) ++counts[ms.conn];
    layout_.plan(sc_, seed_, specs, counts);
    if (!attacks_.empty()) attacks_.assign(layout_);
}

void Simulator::open_connections(const std::vector<ConnSpec>& specs) {
    conn_info_.resize(specs.size());
    conn_.resize(specs.size());
    cold_.resize(specs.size());
    // (host pair, port) -> taken: one flat table rather than a set per pair (~5% of the
    // serial set-up on `large`).
    FlatMap<bool> used_sports(sc_.sport_policy == SportPolicy::symmetric ? specs.size() : 0);
    for (uint32_t c = 0; c < specs.size(); ++c) {
        ConnInfo& ci = conn_info_[c];
        ci.spec = specs[c];
        assign_qpns(c);
        ci.psn_a = ci.spec.psn_a ? *ci.spec.psn_a
                                 : static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
        ci.psn_b = ci.spec.psn_b ? *ci.spec.psn_b
                                 : static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
        assign_sports(ci, used_sports);
        ci.cm_id_a = static_cast<uint32_t>(rng_.next());
        ci.cm_id_b = static_cast<uint32_t>(rng_.next());
        init_conn_state(c);
    }
}

// Each side's QPN: that of an earlier, destroyed QP (QPN reuse), the scenario's, or the next
// of its host.
void Simulator::assign_qpns(uint32_t c) {
    ConnInfo& ci = conn_info_[c];
    const QpnReuse& reuse = layout_.reuse(c);
    auto reused = [&](int side, uint32_t& qpn) {
        if (!reuse.active() || reuse.side != side) return false;
        const ConnInfo& from = conn_info_[reuse.from];
        qpn = reuse.from_side == 0 ? from.qpn_a : from.qpn_b;
        return true;
    };
    if (!reused(0, ci.qpn_a))
        ci.qpn_a = ci.spec.qpn_a ? *ci.spec.qpn_a : hosts_[ci.spec.a].next_qpn++;
    if (!reused(1, ci.qpn_b))
        ci.qpn_b = ci.spec.qpn_b ? *ci.spec.qpn_b : hosts_[ci.spec.b].next_qpn++;
}

// The UDP source port of each direction, as the scenario's NICs choose it.
void Simulator::assign_sports(ConnInfo& ci, FlatMap<bool>& used_sports) {
    switch (sc_.sport_policy) {
        case SportPolicy::symmetric: {
            // mlx5 hashes the connection into 0xC000-0xFFFF; distinct ports between two
            // hosts (while there are ports left) so that the sport rule can pair them.
            const uint32_t lo = std::min(ci.spec.a, ci.spec.b), hi = std::max(ci.spec.a, ci.spec.b);
            const uint64_t pair = uint64_t{lo} * sc_.hosts.size() + hi;  // hosts are 16-bit
            uint16_t port = 0;
            for (int attempt = 0; attempt < 64; ++attempt) {
                port = static_cast<uint16_t>(0xC000 | rng_.between(0, 0x3FFF));
                if (used_sports.try_emplace(pair << 16 | port, true).second) break;
            }
            ci.sport_req = ci.sport_resp = port;
            break;
        }
        case SportPolicy::per_qp:
            ci.sport_req = rxe_sport(ci.qpn_a);
            ci.sport_resp = rxe_sport(ci.qpn_b);
            break;
        case SportPolicy::fixed:
            ci.sport_req = ci.sport_resp = sc_.fixed_sport;
            break;
    }
}

// The copy of ConnInfo's fields that the events read, in the connection's hot state.
void Simulator::init_conn_state(uint32_t c) {
    const ConnInfo& ci = conn_info_[c];
    ConnState& cs = conn_[c];
    cs.next_psn = ci.psn_a;
    cs.e_psn = ci.psn_a;
    cs.cm_ready = !ci.spec.cm;
    cs.qpn_a = ci.qpn_a;
    cs.qpn_b = ci.qpn_b;
    cs.mtu = ci.spec.mtu;
    cs.host_a = static_cast<uint16_t>(ci.spec.a);
    cs.host_b = static_cast<uint16_t>(ci.spec.b);
    cs.sport_req = ci.sport_req;
    cs.sport_resp = ci.sport_resp;
    cs.uc = ci.spec.transport == ConnTransport::uc;
}

// Messages: each connection's workload plus its explicit messages, as one slice of msgs_
// per connection, built in place (on `large`, per-connection vectors and a copy of half a
// million messages were a tenth of the set-up); finish_connection() puts each slice in post
// order. Every workload message is drawn here, connection after connection, before any
// per-message value.
void Simulator::build_messages(const std::vector<ConnSpec>& specs,
                               const std::vector<MessageSpec>& attack_msgs) {
    std::vector<std::vector<const MessageSpec*>> explicit_msgs;
    if (!sc_.messages.empty() || !attack_msgs.empty()) {
        explicit_msgs.resize(specs.size());
        for (const MessageSpec& ms : sc_.messages) explicit_msgs[ms.conn].push_back(&ms);
        for (const MessageSpec& ms : attack_msgs) explicit_msgs[ms.conn].push_back(&ms);
    }
    const double total_weight = op_weight_sum(sc_.workload);
    for (uint32_t c = 0; c < specs.size(); ++c) {
        conn_info_[c].first_msg = static_cast<uint32_t>(msgs_.size());
        if (total_weight > 0 && has_workload(specs, c))
            draw_workload(specs[c].transport == ConnTransport::uc, total_weight);
        if (!explicit_msgs.empty()) append_explicit(explicit_msgs[c]);
        conn_info_[c].num_msgs = static_cast<uint32_t>(msgs_.size()) - conn_info_[c].first_msg;
        conn_[c].msgs_end = static_cast<uint32_t>(msgs_.size());
    }
}

// One connection's `msgs_per_conn` workload messages, posted `gap_ns` apart (+ jitter).
void Simulator::draw_workload(bool uc, double total_weight) {
    const Workload& w = sc_.workload;
    for (uint32_t i = 0; i < w.msgs_per_conn; ++i) {
        const OpWeight& chosen = pick_op(total_weight);
        MsgInfo m;
        m.op = chosen.op;
        if (uc && !is_send_write(m.op)) m.op = OpType::write;  // UC has no READ/atomics
        m.len = static_cast<uint32_t>(rng_.between(chosen.min_len, chosen.max_len));
        if (is_send_write(m.op)) {
            m.imm = rng_.chance(chosen.imm);
            m.inv = !uc && m.op == OpType::send && !m.imm && rng_.chance(chosen.inv);
        }
        m.post_ns = w.start_ns + i * w.gap_ns + (w.jitter_ns ? rng_.between(0, w.jitter_ns) : 0);
        msgs_.push_back(m);
    }
}

// One of the workload's ops, with a probability in proportion to its weight.
const OpWeight& Simulator::pick_op(double total_weight) {
    const std::vector<OpWeight>& ops = sc_.workload.ops;
    double pick = static_cast<double>(rng_.next() >> 11) * 0x1.0p-53 * total_weight;
    for (const OpWeight& o : ops) {
        if (pick < o.weight) return o;
        pick -= o.weight;
    }
    return ops.back();  // what rounding leaves past the last weight
}

// A connection's explicit messages (the scenario's `messages`, the attacks' WRITEs).
void Simulator::append_explicit(const std::vector<const MessageSpec*>& explicit_msgs) {
    for (const MessageSpec* ms : explicit_msgs) {
        MsgInfo& m = msgs_.emplace_back();
        m.op = ms->op;
        m.len = ms->len;
        m.imm = ms->imm;
        m.inv = ms->inv;
        m.post_ns = ms->at_ns;
    }
}

// A connection's slice in post order with its per-message values, and the events that
// start it: its first post and, before that, its CM exchange.
void Simulator::finish_connection(uint32_t c) {
    const ConnInfo& ci = conn_info_[c];
    sort_by_post_time(msgs_.data() + ci.first_msg, ci.num_msgs);
    delay_reused_qpns(c);
    for (uint32_t k = 0; k < ci.num_msgs; ++k) draw_message_values(c, k);
    if (ci.num_msgs) schedule(msgs_[ci.first_msg].post_ns, Ev::post, c, ci.first_msg);
    if (ci.spec.cm && ci.num_msgs) {
        const uint64_t first = msgs_[ci.first_msg].post_ns;
        const uint64_t lead = 3 * sc_.timing.cm_delay_ns;
        send_cm(c, CmKind::req, first > lead ? first - lead : 0);
    }
}

// A reused QPN is free once the earlier QP is destroyed: this connection starts (its QPs
// created, CM exchanged) a generous gap after that QP's last post. The earlier connection
// comes first, so its own delay is already applied.
void Simulator::delay_reused_qpns(uint32_t c) {
    const QpnReuse& r = layout_.reuse(c);
    if (!r.active()) return;
    const ConnInfo& ci = conn_info_[c];
    const ConnInfo& from = conn_info_[r.from];
    const HostTraceSpec& ht = sc_.host_trace;
    const uint64_t after = msgs_[from.first_msg + from.num_msgs - 1].post_ns + ht.reuse_gap_ns +
                           4 * sc_.timing.retx_timeout_ns +
                           2 * (ht.setup_lead_ns + ht.life_margin_ns()) +
                           (ci.spec.cm ? 3 * sc_.timing.cm_delay_ns : 0);
    const uint64_t first = msgs_[ci.first_msg].post_ns;
    if (after > first)
        for (uint32_t k = 0; k < ci.num_msgs; ++k) msgs_[ci.first_msg + k].post_ns += after - first;
}

// The values of message k of connection c that its spec leaves open.
void Simulator::draw_message_values(uint32_t c, uint32_t k) {
    const ConnInfo& ci = conn_info_[c];
    MsgInfo& m = msgs_[ci.first_msg + k];
    m.conn = c;
    m.index = k;
    if (m.op == OpType::cmp_swap || m.op == OpType::fetch_add) m.len = 8;
    m.imm_value = static_cast<uint32_t>(rng_.next());
    m.inv_rkey = static_cast<uint32_t>(rng_.next());
    // The same draws as before the MR model; they now pick the MR of the responder's
    // process a WRITE/READ/atomic lands in, and where (SEND carries neither).
    const uint64_t r_va = rng_.between(0, 1u << 30);
    const uint64_t r_key = rng_.next();
    m.va = 0x7F0000000000ull + r_va * 8;
    m.rkey = static_cast<uint32_t>(r_key);
    if (m.op != OpType::send) {
        const HostLayout::Target at =
            layout_.place(layout_.process_of(c, 1), m.op, m.len, r_va, r_key);
        m.va = at.va;
        m.rkey = at.rkey;
    }
    m.atomic_orig = rng_.next();
    m.npkts = is_send_write(m.op) ? packets_for(m.len, ci.spec.mtu) : 1;
    m.npsn = m.op == OpType::read ? packets_for(m.len, ci.spec.mtu) : m.npkts;
}

// The attacks' rkeys and addresses; the injected messages after every slice.
void Simulator::schedule_attacks() {
    if (attacks_.empty()) return;
    injections_ = attacks_.apply(msgs_, conn_info_, layout_);
    for (uint32_t i = 0; i < injections_.size(); ++i) schedule(injections_[i].at_ns, Ev::inject, i);
}

// The scenario's explicit impairments (impairments.targets), keyed for the events to find.
void Simulator::apply_targets() {
    for (const TargetSpec& t : sc_.imp.targets) {
        const ConnInfo& ci = conn_info_[t.conn];
        if (t.action == Action::drop_ack_before || t.action == Action::drop_ack_after) {
            ack_targets_[(uint64_t{t.conn} << 32) | t.msg] |= action_bit(t.action);
            continue;
        }
        MsgInfo& m = msgs_[ci.first_msg + t.msg];
        if (t.action == Action::rnr)
            progress_[ci.first_msg + t.msg].rnr_remaining = static_cast<uint8_t>(t.count);
        else if (t.action == Action::access_error) {
            // An rkey its responder never registered: the attack-like case of the scenario.
            m.access_error = true;
            m.rkey = layout_.unregistered_rkey(layout_.process_of(t.conn, 1), m.rkey);
        } else
            pkt_targets_[(uint64_t{ci.first_msg + t.msg} << 24) | t.pkt] |= action_bit(t.action);
    }
}

// The end of the span over which UD, background and malformed frames are spread: the
// workload's msgs_per_conn gaps or the last explicit message, and 10 us more.
uint64_t Simulator::extra_frames_end() const {
    const Workload& w = sc_.workload;
    uint64_t span_end = w.start_ns + uint64_t{w.msgs_per_conn} * w.gap_ns;
    for (const MessageSpec& ms : sc_.messages) span_end = std::max(span_end, ms.at_ns);
    return span_end + 10'000;
}

// A UD SEND between two random hosts of one address family, at a random time up to
// `span_end`.
void Simulator::send_ud_frame(uint64_t span_end) {
    const uint32_t a = static_cast<uint32_t>(rng_.between(0, sc_.hosts.size() - 1));
    const uint32_t b = draw_peer(a);
    const uint32_t idx = alloc_packet();
    SimPacket& p = pkt(idx);
    p.src_host = static_cast<uint16_t>(a);
    p.dst_host = static_cast<uint16_t>(b);
    p.sport =
        sc_.sport_policy == SportPolicy::fixed ? sc_.fixed_sport : rxe_sport(hosts_[a].ud_qpn);
    const bool imm = rng_.chance(0.5);
    p.t.bth.opcode = imm ? op::kUdSendOnlyImm : op::kUdSendOnly;
    p.t.bth.dest_qp = hosts_[b].ud_qpn;
    p.t.bth.psn = static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
    p.t.deth.qkey = kUdQkey;
    p.t.deth.src_qp = hosts_[a].ud_qpn;
    p.t.imm = static_cast<uint32_t>(rng_.next());
    p.payload_len = static_cast<uint32_t>(rng_.between(0, sc_.ud.max_len));
    p.t.bth.pad = proto::pad_for(p.payload_len);
    schedule(rng_.between(0, span_end), Ev::tx, idx);
}

// A background or malformed frame (`variant`: its kind), put straight at the observation
// point at a random time up to `span_end`: no host sends it, no host receives it.
void Simulator::inject_frame(PacketClass cls, uint8_t variant, uint64_t span_end) {
    const std::size_t nh = sc_.hosts.size();
    const uint32_t idx = alloc_packet();
    SimPacket& p = pkt(idx);
    p.cls = cls;
    p.variant = variant;
    p.src_host = static_cast<uint16_t>(rng_.between(0, nh - 1));
    p.dst_host = static_cast<uint16_t>(rng_.between(0, nh - 1));
    if (nh > 1 && p.dst_host == p.src_host)
        p.dst_host = static_cast<uint16_t>((p.src_host + 1) % nh);
    p.sport = static_cast<uint16_t>(rng_.between(1024, 65535));
    p.payload_len = static_cast<uint32_t>(rng_.between(0, 512));
    p.t.bth.opcode = op::kWriteOnly;
    p.t.bth.dest_qp = static_cast<uint32_t>(rng_.between(2, proto::kPsnMask));
    p.t.bth.psn = static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
    schedule(rng_.between(0, span_end), Ev::observe, idx, kNone);
}

uint32_t Simulator::frame_bytes(const SimPacket& p) const {
    const HostSpec& h = sc_.hosts[p.src_host];
    const std::size_t l3 = h.ip.is_v4() ? proto::kIpv4MinHeaderLen : proto::kIpv6HeaderLen;
    return static_cast<uint32_t>(proto::kEthHeaderLen + h.vlans.size() * proto::kVlanTagLen + l3 +
                                 proto::kUdpHeaderLen + proto::kBthLen +
                                 proto::opcode_info(p.t.bth.opcode).ext_len + p.payload_len +
                                 p.t.bth.pad + proto::kIcrcLen);
}

void Simulator::transmit(uint32_t idx, uint64_t desired) {
    if (desired <= now_)
        on_tx(idx);
    else
        schedule(desired, Ev::tx, idx);
}

// The sender's NIC serializes its frames one after another at the link rate (FIFO).
void Simulator::on_tx(uint32_t idx) {
    SimPacket& p = pkt(idx);
    HostState& h = hosts_[p.src_host];
    const uint64_t start = std::max(now_, h.tx_free_ns);
    const uint64_t bits = uint64_t{frame_bytes(p) + kWireOverheadBytes} * 8;
    const uint64_t ser = (bits * 1000 + rate_mbps_ - 1) / rate_mbps_;
    h.tx_free_ns = start + ser;
    ++stats_.sent;
    // UC has no acknowledgement: the requester completes a message once its last packet
    // has left the NIC.
    if (!host_ev_.empty() && p.dir == 0 && p.msg_uid != kNone && conn_[p.conn].uc &&
        p.index + 1 == msgs_[p.msg_uid].npkts && host_ev_[p.msg_uid].done_ns == kNoTime) {
        host_ev_[p.msg_uid].done_ns = start + ser;
        host_ev_[p.msg_uid].status = WcStatus::success;
    }
    if (p.drop_before) {
        ++stats_.lost_before;
        free_packet(idx);
        return;
    }
    if (sink_) sink_->prefetch(p);  // observed in a microsecond or so
    // b: the connection, for prefetch().
    schedule(start + ser + sc_.prop_pre_ns + p.extra_delay_ns, Ev::observe, idx, p.conn);
}

void Simulator::on_observe(uint32_t idx) {
    SimPacket& p = pkt(idx);
    const uint32_t conn = p.conn;
    const uint8_t dir = p.dir;
    if (conn != kNone) {
        ConnState& cs = conn_[conn];
        if (p.swap && cs.held[dir] == kNone) {
            cs.held[dir] = idx;
            ++cs.held_gen[dir];
            schedule(now_ + sc_.timing.swap_hold_ns, Ev::release, conn, cs.held_gen[dir] * 2 + dir);
            return;
        }
    }
    emit(idx);
    after_observer(idx);
    if (conn != kNone) {
        ConnState& cs = conn_[conn];
        const uint32_t held = cs.held[dir];
        if (held != kNone && held != idx) {
            cs.held[dir] = kNone;
            emit(held);
            after_observer(held);
        }
    }
}

void Simulator::emit(uint32_t idx) {
    SimPacket& p = pkt(idx);
    p.t_ns = kEpochNs + now_;
    sink_->observe(p);
    ++emitted_;
}

void Simulator::after_observer(uint32_t idx) {
    SimPacket& p = pkt(idx);
    if (p.cls != PacketClass::roce) {
        free_packet(idx);
        return;
    }
    if (p.drop_after) {
        ++stats_.lost_after;
        free_packet(idx);
        return;
    }
    uint64_t at = now_ + sc_.prop_post_ns;
    if (sc_.receiver_queue) {
        // Serialized again on the receiver's link, after whatever is queued for it.
        HostState& h = hosts_[p.dst_host];
        const uint64_t bits = uint64_t{frame_bytes(p) + kWireOverheadBytes} * 8;
        at = std::max(at, h.rx_free_ns) + (bits * 1000 + rate_mbps_ - 1) / rate_mbps_;
        h.rx_free_ns = at;
    }
    schedule(at, Ev::deliver, idx, p.conn);  // b: for prefetch()
    // The delivery reads the message state of the request, or of the oldest messages the
    // response completes (complete_before()), last touched when posted, long evicted: load
    // it now, ~prop_post_ns (hundreds of events) ahead. The connection's line is in cache
    // (on_observe() just read it).
    uint32_t uid = p.msg_uid;
    if (p.dir == 1 && p.conn != kNone) {
        const SendQueue& sq = conn_[p.conn].sq;
        uid = sq.empty() ? kNone : sq.front();
    }
    if (uid != kNone) {
        __builtin_prefetch(&msgs_[uid]);
        __builtin_prefetch(&progress_[uid]);
    }
}

void Simulator::on_deliver(uint32_t idx) {
    const SimPacket& p = pkt(idx);
    const uint32_t conn = p.conn;
    const CmKind cm = p.cm;
    const uint8_t dir = p.dir;
    // Copied before the slot is freed: the handlers allocate packets (the pool may grow).
    const Delivery d{.msg_uid = p.msg_uid,
                     .index = p.index,
                     .psn = p.t.bth.psn,
                     .opcode = p.t.bth.opcode,
                     .syndrome = p.t.aeth.syndrome,
                     .ecn = p.ecn,
                     .ack_req = p.t.bth.ack_req};
    free_packet(idx);
    if (cm == CmKind::req) {
        send_cm(conn, CmKind::rep, now_ + sc_.timing.cm_delay_ns);
        return;
    }
    if (cm == CmKind::rep) {
        const uint64_t rtu_at = now_ + sc_.timing.cm_delay_ns / 3;
        send_cm(conn, CmKind::rtu, rtu_at);
        conn_[conn].cm_ready = true;
        ConnCold& cold = cold_[conn];
        if (cold.deferred_post != kNone) schedule(rtu_at, Ev::post, conn, cold.deferred_post);
        cold.deferred_post = kNone;
        return;
    }
    if (conn == kNone || cm != CmKind::none) return;  // UD traffic, RTU
    if (d.opcode == op::kCnp) {
        // DCQCN-like reaction point: halve the QP's rate, recover step by step.
        ConnState& cs = conn_[conn];
        cs.rate_div = std::min(cs.rate_div * 2, kMaxRateDivider);
        schedule(now_ + sc_.timing.rate_recovery_ns, Ev::rate_recover, conn,
                 ++cold_[conn].rate_gen);
        return;
    }
    if (dir == 0)
        on_request(conn, d);
    else
        on_response(conn, d);
}

// ---- Requester --------------------------------------------------------------------

// A post event carries the message's uid (its connection's first_msg + its index there).
void Simulator::on_post(uint32_t conn, uint32_t uid) {
    ConnState& cs = conn_[conn];
    MsgInfo& m = msgs_[uid];
    MsgProgress& pg = progress_[uid];
    if (!cs.cm_ready) {  // the chain of posts resumes when the RTU goes out
        cold_[conn].deferred_post = uid;
        return;
    }
    if (uid + 1 < cs.msgs_end) schedule(msgs_[uid + 1].post_ns, Ev::post, conn, uid + 1);
    if (!host_ev_.empty()) host_ev_[uid].post_ns = now_;
    if (cs.error) {  // a QP in error flushes new work requests without sending them
        pg.done = true;
        note_done(uid, WcStatus::wr_flush_err);
        return;
    }
    m.psn_first = cs.next_psn;
    pg.resp_next = m.psn_first;
    cs.next_psn = psn_add(cs.next_psn, m.npsn);
    if (cs.uc) {
        send_message_from(conn, uid, 0);
        pg.done = true;
        return;
    }
    cs.sq.push_back(uid);
    if (!cs.paused) send_message_from(conn, uid, 0);
    arm_retx(conn, false);
}

bool Simulator::target(uint32_t uid, uint32_t pkt_index, Action action) const {
    if (pkt_targets_.empty()) return false;
    const auto it = pkt_targets_.find((uint64_t{uid} << 24) | pkt_index);
    return it != pkt_targets_.end() && (it->second & action_bit(action)) != 0;
}

void Simulator::send_message_from(uint32_t conn, uint32_t uid, uint32_t from_pkt) {
    ConnState& cs = conn_[conn];
    const MsgInfo& m = msgs_[uid];
    const bool uc = cs.uc;
    const Impairments& imp = sc_.imp;
    for (uint32_t i = from_pkt; i < m.npkts; ++i) {
        const uint32_t idx = alloc_packet();
        SimPacket& p = pkt(idx);
        p.src_host = cs.host_a;
        p.dst_host = cs.host_b;
        p.sport = cs.sport_req;
        p.conn = conn;
        p.dir = 0;
        p.msg_uid = uid;
        p.index = i;
        p.retx = i < progress_[uid].sent_pkts;
        proto::Bth& b = p.t.bth;
        b.dest_qp = cs.qpn_b;
        b.psn = psn_add(m.psn_first, i);
        const bool last = i + 1 == m.npkts;
        switch (m.op) {
            case OpType::send:
            case OpType::write: {
                const proto::Position pos = position_of(i, m.npkts);
                b.opcode = request_opcode(m.op, pos, m.imm && last, m.inv && last, uc);
                p.payload_len = std::min(cs.mtu, m.len - std::min(m.len, i * cs.mtu));
                b.ack_req = last && !uc;
                b.se = last && m.op == OpType::send;
                p.t.reth = {m.va, m.rkey, m.len};
                p.t.imm = m.imm_value;
                p.t.ieth_rkey = m.inv_rkey;
                break;
            }
            case OpType::read:
                b.opcode = op::kReadRequest;
                b.ack_req = true;
                p.t.reth = {m.va, m.rkey, m.len};
                break;
            case OpType::cmp_swap:
            case OpType::fetch_add:
                b.opcode = m.op == OpType::cmp_swap ? op::kCmpSwap : op::kFetchAdd;
                b.ack_req = true;
                p.t.atomic = {m.va, m.rkey, m.atomic_orig ^ 0x5A5A, m.atomic_orig};
                break;
        }
        b.pad = proto::pad_for(p.payload_len);
        if (!p.retx) {
            const bool data = is_send_write(m.op);
            p.drop_before =
                target(uid, i, Action::drop_before) || (data && rng_.chance(imp.loss_before));
            p.drop_after = !p.drop_before && (target(uid, i, Action::drop_after) ||
                                              (data && rng_.chance(imp.loss_after)));
            p.swap = target(uid, i, Action::swap) || (data && rng_.chance(imp.swap));
            if (target(uid, i, Action::ce_mark) || rng_.chance(imp.ce_mark)) p.ecn = proto::kEcnCe;
        } else {
            ++stats_.retransmitted;
        }
        if (imp.spray_paths > 1)
            p.extra_delay_ns = rng_.between(0, imp.spray_paths - 1) * imp.spray_step_ns;
        progress_[uid].sent_pkts = std::max(progress_[uid].sent_pkts, i + 1);

        uint64_t desired = now_;
        if (cs.rate_div > 1) {  // paced after CNPs
            desired = std::max(now_, cs.next_tx_ns);
            const uint64_t bits = uint64_t{frame_bytes(p) + kWireOverheadBytes} * 8;
            cs.next_tx_ns = desired + (bits * 1000 / rate_mbps_) * cs.rate_div;
        }
        transmit(idx, desired);
    }
}

void Simulator::go_back_n(uint32_t conn, uint32_t psn) {
    ConnState& cs = conn_[conn];
    for (uint32_t uid : cs.sq.items()) {
        const MsgInfo& m = msgs_[uid];
        if (progress_[uid].done) continue;
        const uint32_t last = psn_add(m.psn_first, m.npsn - 1);
        if (psn_newer(psn, last)) continue;
        uint32_t from = 0;
        if (is_send_write(m.op) && psn_newer(psn, m.psn_first))
            from = proto::psn_sub(psn, m.psn_first);
        if (m.op == OpType::read) progress_[uid].resp_next = m.psn_first;  // asked again whole
        send_message_from(conn, uid, from);
    }
}

// Marks SEND/WRITE messages acknowledged by a response at `psn` (inclusive: ACK-class;
// exclusive: NAKs, and responses of a later READ/atomic).
void Simulator::complete_before(uint32_t conn, uint32_t psn, bool inclusive) {
    for (uint32_t uid : conn_[conn].sq.items()) {
        const MsgInfo& m = msgs_[uid];
        MsgProgress& pg = progress_[uid];
        if (pg.done || !is_send_write(m.op)) continue;
        const uint32_t last = psn_add(m.psn_first, m.npsn - 1);
        if (inclusive ? psn_not_older(psn, last) : psn_newer(psn, last)) {
            pg.done = true;
            note_done(uid, WcStatus::success);
        } else {
            break;
        }
    }
}

void Simulator::pop_done(uint32_t conn) {
    ConnState& cs = conn_[conn];
    while (!cs.sq.empty() && progress_[cs.sq.front()].done) cs.sq.pop_front();
}

// The requester's local ACK timer. Restarting it only moves a deadline; the queue holds at
// most one timer event per QP, which re-queues itself while the deadline lies ahead (on
// large scenarios every ACK restarts the timer, and stale events would fill the queue).
void Simulator::arm_retx(uint32_t conn, bool restart) {
    ConnState& cs = conn_[conn];
    if (cs.sq.empty() || cs.paused || cs.error) {
        cs.retx_armed = false;
        return;
    }
    if (cs.retx_armed && !restart) return;
    cs.retx_armed = true;
    cs.retx_deadline = now_ + sc_.timing.retx_timeout_ns;
    if (!cs.retx_event_pending) {
        cs.retx_event_pending = true;
        schedule(cs.retx_deadline, Ev::retx_timer, conn, 0);
    }
}

void Simulator::on_retx_timer(uint32_t conn, uint32_t) {
    ConnState& cs = conn_[conn];
    cs.retx_event_pending = false;
    if (!cs.retx_armed) return;
    if (now_ < cs.retx_deadline) {
        cs.retx_event_pending = true;
        schedule(cs.retx_deadline, Ev::retx_timer, conn, 0);
        return;
    }
    cs.retx_armed = false;
    if (cs.sq.empty() || cs.paused || cs.error) return;
    ++stats_.timeouts;
    go_back_n(conn, msgs_[cs.sq.front()].psn_first);
    arm_retx(conn, true);
}

void Simulator::on_response(uint32_t conn, const Delivery& p) {
    ConnState& cs = conn_[conn];
    if (cs.error) return;
    const uint8_t code = p.opcode;
    const uint32_t psn = p.psn;
    if (code == op::kAck) {
        const uint8_t syn = p.syndrome;
        switch (proto::aeth_class(syn)) {
            case proto::AethClass::ack: {
                const std::size_t before = cs.sq.size();
                complete_before(conn, psn, true);
                pop_done(conn);
                if (cs.sq.size() != before) arm_retx(conn, true);
                return;
            }
            case proto::AethClass::rnr_nak:
                complete_before(conn, psn, false);
                pop_done(conn);
                cs.paused = true;
                cold_[conn].rnr_psn = psn;
                arm_retx(conn, true);  // disarms: the RNR timer takes over
                schedule(now_ + sc_.timing.rnr_timer_ns, Ev::rnr_resume, conn,
                         ++cold_[conn].rnr_gen);
                return;
            case proto::AethClass::nak:
                complete_before(conn, psn, false);
                pop_done(conn);
                if (proto::nak_code(syn) == proto::NakCode::psn_seq_error) {
                    go_back_n(conn, psn);
                    arm_retx(conn, true);
                } else {  // fatal: the QP goes to error, outstanding work is flushed
                    cs.error = true;
                    for (uint32_t uid : cs.sq.items()) {
                        // The message the NAK names fails; the rest is flushed.
                        if (!progress_[uid].done)
                            note_done(uid,
                                      proto::psn_sub(psn, msgs_[uid].psn_first) < msgs_[uid].npsn
                                          ? WcStatus::rem_access_err
                                          : WcStatus::wr_flush_err);
                        progress_[uid].done = true;
                    }
                    cs.sq.clear();
                    arm_retx(conn, true);
                }
                return;
            case proto::AethClass::reserved:
                return;
        }
        return;
    }
    const proto::OpcodeInfo& info = proto::opcode_info(code);
    for (uint32_t uid : cs.sq.items()) {
        const MsgInfo& m = msgs_[uid];
        MsgProgress& pg = progress_[uid];
        if (pg.done) continue;
        if (info.kind == proto::OpKind::read_response && m.op == OpType::read) {
            if (psn != pg.resp_next) return;  // out of order: wait for the timeout
            pg.resp_next = psn_add(pg.resp_next, 1);
            complete_before(conn, m.psn_first, false);
            if (info.position == proto::Position::last || info.position == proto::Position::only) {
                pg.done = true;
                note_done(uid, WcStatus::success);
            }
            break;
        }
        if (info.kind == proto::OpKind::atomic_ack &&
            (m.op == OpType::cmp_swap || m.op == OpType::fetch_add) && m.psn_first == psn) {
            complete_before(conn, psn, false);
            pg.done = true;
            note_done(uid, WcStatus::success);
            break;
        }
    }
    pop_done(conn);
    arm_retx(conn, true);
}

// ---- Responder --------------------------------------------------------------------

void Simulator::on_request(uint32_t conn, const Delivery& p) {
    ConnState& cs = conn_[conn];
    if (p.ecn == proto::kEcnCe) maybe_send_cnp(conn);
    if (cs.uc && !host_ev_.empty()) note_uc_request(conn, p);
    if (cs.uc || cs.resp_error) return;
    const uint32_t psn = p.psn;
    const MsgInfo& m = msgs_[p.msg_uid];
    if (psn == cs.e_psn) {
        if (p.index == 0) {
            uint8_t& rnr_remaining = progress_[p.msg_uid].rnr_remaining;
            if (rnr_remaining > 0 && m.op == OpType::send) {
                --rnr_remaining;
                cs.nak_state = true;
                send_nak(conn, proto::aeth_rnr_nak(kRnrTimerCode), psn);
                return;
            }
            if (m.access_error) {
                cs.resp_error = true;
                send_nak(conn, proto::aeth_nak(proto::NakCode::remote_access), psn);
                return;
            }
        }
        cs.nak_state = false;
        if (!host_ev_.empty() && p.index + 1 == m.npkts) host_ev_[p.msg_uid].delivered_ns = now_;
        switch (m.op) {
            case OpType::read:
                cs.e_psn = psn_add(cs.e_psn, m.npsn);
                cs.msn = psn_add(cs.msn, 1);
                send_read_responses(conn, m);
                return;
            case OpType::cmp_swap:
            case OpType::fetch_add:
                cs.e_psn = psn_add(cs.e_psn, 1);
                cs.msn = psn_add(cs.msn, 1);
                send_atomic_ack(conn, m);
                return;
            default:
                cs.e_psn = psn_add(cs.e_psn, 1);
                if (p.index + 1 == m.npkts) cs.msn = psn_add(cs.msn, 1);
                break;
        }
        if (p.ack_req) {
            cs.ack_psn = psn;
            cs.ack_psn_valid = true;
            if (!cs.ack_pending) {  // coalescing: one ACK covers every AckReq in the window
                cs.ack_pending = true;
                schedule(now_ + sc_.timing.ack_delay_ns, Ev::ack_timer, conn, ++cs.ack_gen);
            }
        }
        return;
    }
    if (psn_newer(psn, cs.e_psn)) {  // a gap: one NAK per episode, then silence
        if (!cs.nak_state) {
            cs.nak_state = true;
            send_nak(conn, proto::aeth_nak(proto::NakCode::psn_seq_error), cs.e_psn);
        }
        return;
    }
    // Duplicate: repeat READ responses / the ATOMIC ACK, re-ACK an AckReq.
    if (m.op == OpType::read) {
        send_read_responses(conn, m);
    } else if (m.op == OpType::cmp_swap || m.op == OpType::fetch_add) {
        send_atomic_ack(conn, m);
    } else if (p.ack_req && cs.ack_psn_valid && !cs.ack_pending) {
        cs.ack_pending = true;
        schedule(now_ + sc_.timing.ack_delay_ns, Ev::ack_timer, conn, ++cs.ack_gen);
    }
}

SimPacket& Simulator::new_response(uint32_t conn, uint32_t& idx, uint8_t opcode, uint32_t psn) {
    const ConnState& cs = conn_[conn];
    idx = alloc_packet();
    SimPacket& p = pkt(idx);
    p.src_host = cs.host_b;
    p.dst_host = cs.host_a;
    p.sport = cs.sport_resp;
    p.conn = conn;
    p.dir = 1;
    p.t.bth.opcode = opcode;
    p.t.bth.dest_qp = cs.qpn_a;
    p.t.bth.psn = psn;
    p.t.aeth.msn = cs.msn;
    return p;
}

// Responses leave in PSN order: none may overtake one queued before it.
void Simulator::queue_response(uint32_t conn, uint32_t idx, uint64_t desired) {
    ConnState& cs = conn_[conn];
    desired = std::max(desired, cs.resp_not_before);
    cs.resp_not_before = desired;
    transmit(idx, desired);
}

void Simulator::send_ack(uint32_t conn) {
    ConnState& cs = conn_[conn];
    uint32_t idx;
    SimPacket& p = new_response(conn, idx, op::kAck, cs.ack_psn);
    p.t.aeth.syndrome = proto::aeth_ack();
    const auto it = ack_targets_.find((uint64_t{conn} << 32) | cs.acks_sent);
    const uint32_t mask = it == ack_targets_.end() ? 0 : it->second;
    p.index = cs.acks_sent++;
    p.drop_before =
        (mask & action_bit(Action::drop_ack_before)) != 0 || rng_.chance(sc_.imp.ack_loss_before);
    p.drop_after = !p.drop_before && (mask & action_bit(Action::drop_ack_after)) != 0;
    queue_response(conn, idx, now_);
}

void Simulator::send_nak(uint32_t conn, uint8_t syndrome, uint32_t psn) {
    ConnState& cs = conn_[conn];
    cs.ack_pending = false;  // the NAK acknowledges everything before its PSN
    ++cs.ack_gen;
    uint32_t idx;
    SimPacket& p = new_response(conn, idx, op::kAck, psn);
    p.t.aeth.syndrome = syndrome;
    queue_response(conn, idx, now_ + sc_.timing.responder_delay_ns);
}

void Simulator::send_read_responses(uint32_t conn, const MsgInfo& m) {
    ConnState& cs = conn_[conn];
    cs.ack_pending = false;  // READ responses acknowledge earlier requests
    ++cs.ack_gen;
    const uint32_t mtu = cs.mtu;
    const uint32_t uid = static_cast<uint32_t>(&m - msgs_.data());
    for (uint32_t i = 0; i < m.npsn; ++i) {
        const proto::Position pos = position_of(i, m.npsn);
        constexpr uint8_t kCode[] = {op::kReadResponseFirst, op::kReadResponseMiddle,
                                     op::kReadResponseLast, op::kReadResponseOnly};
        uint32_t idx;
        SimPacket& p =
            new_response(conn, idx, kCode[static_cast<int>(pos)], psn_add(m.psn_first, i));
        p.t.aeth.syndrome = proto::aeth_ack();
        p.payload_len = std::min(mtu, m.len - std::min(m.len, i * mtu));
        p.t.bth.pad = proto::pad_for(p.payload_len);
        p.msg_uid = uid;
        p.index = i;
        queue_response(conn, idx, now_ + sc_.timing.read_delay_ns);
    }
}

void Simulator::send_atomic_ack(uint32_t conn, const MsgInfo& m) {
    ConnState& cs = conn_[conn];
    cs.ack_pending = false;
    ++cs.ack_gen;
    uint32_t idx;
    SimPacket& p = new_response(conn, idx, op::kAtomicAck, m.psn_first);
    p.t.aeth.syndrome = proto::aeth_ack();
    p.t.atomic_ack = m.atomic_orig;
    p.msg_uid = static_cast<uint32_t>(&m - msgs_.data());
    queue_response(conn, idx, now_ + sc_.timing.atomic_delay_ns);
}

// Notification point: a CE-marked request makes the responder's NIC send a CNP to the
// requester QP, at most one per QP per interval (mlx5's min_time_between_cnps).
void Simulator::maybe_send_cnp(uint32_t conn) {
    ConnCold& cold = cold_[conn];
    if (cold.cnp_sent && now_ - cold.last_cnp_ns < sc_.timing.cnp_interval_ns) return;
    cold.cnp_sent = true;
    cold.last_cnp_ns = now_;
    uint32_t idx;
    SimPacket& p = new_response(conn, idx, op::kCnp, 0);
    p.t.bth.becn = true;
    p.t.bth.pkey = 0xFFFF;
    p.ecn = 0;
    p.dscp = 48;  // CNPs ride the high-priority class
    transmit(idx, now_ + sc_.timing.cnp_delay_ns);
}

void Simulator::send_cm(uint32_t conn, CmKind kind, uint64_t desired) {
    const ConnInfo& ci = conn_info_[conn];
    const uint32_t idx = alloc_packet();
    SimPacket& p = pkt(idx);
    const bool from_a = kind != CmKind::rep;
    p.src_host = static_cast<uint16_t>(from_a ? ci.spec.a : ci.spec.b);
    p.dst_host = static_cast<uint16_t>(from_a ? ci.spec.b : ci.spec.a);
    p.sport = sc_.sport_policy == SportPolicy::fixed ? sc_.fixed_sport : rxe_sport(1);
    p.conn = conn;
    p.dir = from_a ? 0 : 1;
    p.cm = kind;
    p.t.bth.opcode = op::kUdSendOnly;
    p.t.bth.dest_qp = 1;
    p.t.bth.psn = static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
    p.t.deth.qkey = kCmQkey;
    p.t.deth.src_qp = 1;
    p.payload_len = kMadLen;
    switch (kind) {
        case CmKind::req:
            p.cm_local_id = ci.cm_id_a;
            p.cm_qpn = ci.qpn_a;
            p.cm_psn = ci.psn_a;
            break;
        case CmKind::rep:
            p.cm_local_id = ci.cm_id_b;
            p.cm_remote_id = ci.cm_id_a;
            p.cm_qpn = ci.qpn_b;
            p.cm_psn = ci.psn_b;
            break;
        case CmKind::rtu:
            p.cm_local_id = ci.cm_id_a;
            p.cm_remote_id = ci.cm_id_b;
            break;
        case CmKind::none:
            break;
    }
    transmit(idx, std::max(desired, now_));
}

// An event comes out in a few dozen events (see event_queue.hpp): start loading the
// connection state it will touch. Only hints: nothing here changes state.
void Simulator::prefetch(const Event& e) {
    uint32_t conn = e.a;
    switch (e.type) {
        case Ev::post:
            __builtin_prefetch(&msgs_[e.b]);
            __builtin_prefetch(&progress_[e.b]);
            if (e.b + 1 < msgs_.size()) __builtin_prefetch(&msgs_[e.b + 1].post_ns);
            sink_->prefetch_conn(e.a);
            break;
        case Ev::ack_timer:
        case Ev::retx_timer:
        case Ev::rnr_resume:
        case Ev::rate_recover:
            break;
        case Ev::deliver:
        case Ev::observe:  // on_observe() reads the held packets
            conn = e.b;
            if (conn == kNone) return;
            break;
        case Ev::tx:
        case Ev::release:
        case Ev::inject:
            return;
    }
    const char* cs = reinterpret_cast<const char*>(&conn_[conn]);
    __builtin_prefetch(cs);
    __builtin_prefetch(cs + 64);
}

void Simulator::record_host_events() {
    host_ev_.assign(msgs_.size(), MsgHostEvents{});
    uc_rx_.assign(conn_.size(), {kNone, 0});
}

// A UC responder (IBTA 9.7.5.1: no retransmission, no NAK) delivers a message whose packets
// arrive in order from its First/Only; a packet out of that order drops the message in
// progress, and a First/Only starts the next one.
void Simulator::note_uc_request(uint32_t conn, const Delivery& p) {
    auto& [uid, next] = uc_rx_[conn];
    if (p.index == 0) {
        uid = p.msg_uid;
        next = 0;
    }
    if (uid != p.msg_uid || next != p.index) {
        uid = kNone;
        return;
    }
    if (++next == msgs_[uid].npkts) {
        host_ev_[uid].delivered_ns = now_;
        uid = kNone;
    }
}

bool Simulator::run_for(ObservedSink& sink, uint64_t packets) {
    sink_ = &sink;
    const uint64_t stop = packets > UINT64_MAX - emitted_ ? UINT64_MAX : emitted_ + packets;
    Event e;
    while (emitted_ < stop) {
        if (!events_.pop(now_, e, [this](const Event& next) { prefetch(next); })) {
            stats_.end_ns = now_;
            sink_ = nullptr;
            return true;
        }
        ++stats_.events;
        switch (e.type) {
            case Ev::post:
                on_post(e.a, e.b);
                break;
            case Ev::tx:
                on_tx(e.a);
                break;
            case Ev::observe:
                on_observe(e.a);
                break;
            case Ev::release: {
                ConnState& cs = conn_[e.a];
                const uint32_t dir = e.b & 1;
                const uint32_t held = cs.held[dir];
                if (held != kNone && cs.held_gen[dir] == e.b / 2) {
                    cs.held[dir] = kNone;
                    emit(held);
                    after_observer(held);
                }
                break;
            }
            case Ev::deliver:
                on_deliver(e.a);
                break;
            case Ev::inject:
                on_inject(e.a);
                break;
            case Ev::ack_timer: {
                ConnState& cs = conn_[e.a];
                if (cs.ack_pending && cs.ack_gen == e.b) {
                    cs.ack_pending = false;
                    send_ack(e.a);
                }
                break;
            }
            case Ev::retx_timer:
                on_retx_timer(e.a, e.b);
                break;
            case Ev::rnr_resume: {
                ConnState& cs = conn_[e.a];
                if (cs.paused && cold_[e.a].rnr_gen == e.b) {
                    cs.paused = false;
                    go_back_n(e.a, cold_[e.a].rnr_psn);
                    arm_retx(e.a, true);
                }
                break;
            }
            case Ev::rate_recover: {
                ConnState& cs = conn_[e.a];
                if (cold_[e.a].rate_gen == e.b && cs.rate_div > 1) {
                    cs.rate_div /= 2;
                    if (cs.rate_div > 1)
                        schedule(now_ + sc_.timing.rate_recovery_ns, Ev::rate_recover, e.a,
                                 ++cold_[e.a].rate_gen);
                }
                break;
            }
        }
    }
    sink_ = nullptr;
    return false;
}

}  // namespace insert::gen

namespace insert::gen {

// An attack's packet at the observation point (attack_plan.hpp). From the attacker, or to
// a QPN no QP has, it reaches the victim's NIC, which drops it (not its QP's peer; no such
// QP): it is observed and goes no further. Spoofed from the victim QP's peer, it waits
// until that peer has nothing more to send, then takes the PSN the QP expects, is accepted
// and acknowledged (the ACK goes to the peer, which ignores an ACK for nothing it sent).
void Simulator::on_inject(uint32_t i) {
    const Injection& inj = injections_[i];
    const ConnInfo& ci = conn_info_[inj.conn];
    ConnState& cs = conn_[inj.conn];
    MsgInfo& m = msgs_[inj.uid];
    // Spoofed from the peer: accepted and acknowledged (spoofed_injection), or never
    // completing (spoofed_first, spoofed_unacked: observed, then dropped by the victim's NIC
    // or left waiting for the rest - on the wire alike, nothing answers).
    const bool accepted = inj.kind == AttackKind::spoofed_injection;
    const bool spoofed = accepted || inj.kind == AttackKind::spoofed_first ||
                         inj.kind == AttackKind::spoofed_unacked;
    if (spoofed) {
        if (cs.error || cs.resp_error) return;  // nothing left to inject into
        const uint32_t last = ci.first_msg + ci.num_msgs - 1;
        if (!progress_[last].done || !cs.sq.empty()) {
            schedule(now_ + kInjectRetryNs, Ev::inject, i);
            return;
        }
        m.psn_first = cs.e_psn;  // what the peer's next request would carry
    }
    const uint32_t idx = alloc_packet();
    SimPacket& p = pkt(idx);
    p.src_host = inj.src_host;
    p.dst_host = inj.dst_host;
    if (inj.nic_host != inj.src_host) p.nic_host = inj.nic_host;
    // A raw sender's source port; the spoofed packet copies the peer's.
    p.sport = spoofed ? cs.sport_req : kInjectSport;
    p.conn = accepted ? inj.conn : kNone;  // kNone: delivered to no connection
    p.dir = 0;
    p.msg_uid = inj.uid;
    const bool first = inj.kind == AttackKind::spoofed_first;
    p.t.bth.opcode = first ? op::kWriteFirst : op::kWriteOnly;
    p.t.bth.dest_qp = inj.dest_qpn;
    p.t.bth.psn = m.psn_first;
    p.t.bth.ack_req = !first;
    p.t.reth = {m.va, m.rkey, m.len};
    p.payload_len = first ? ci.spec.mtu : m.len;  // a First carries a full MTU
    // The victim's QPs live on until then (host_trace.cpp), as for an accepted one.
    if (!host_ev_.empty()) host_ev_[inj.uid].injected_ns = now_;
    p.t.bth.pad = proto::pad_for(p.payload_len);
    schedule(now_, Ev::observe, idx, p.conn);
}

}  // namespace insert::gen
