#include "bench/gen/builtin_scenarios.hpp"

#include <algorithm>
#include <cmath>

namespace insert::gen {

namespace {

proto::IpAddress ip(const char* text) {
    return *proto::IpAddress::parse(text);
}

uint32_t scaled(uint32_t n, double scale) {
    return std::max<uint32_t>(1, static_cast<uint32_t>(std::lround(n * scale)));
}

std::vector<HostSpec> ipv4_hosts(int n) {
    std::vector<HostSpec> hosts;
    for (int i = 1; i <= n; ++i) hosts.push_back({ip(("10.0.0." + std::to_string(i)).c_str()), {}});
    return hosts;
}

OpWeight op(OpType o, double weight, uint32_t min_len, uint32_t max_len, double imm = 0,
            double inv = 0) {
    OpWeight w;
    w.op = o;
    w.weight = weight;
    w.min_len = min_len;
    w.max_len = max_len;
    w.imm = imm;
    w.inv = inv;
    return w;
}

ConnSpec conn(uint32_t a, uint32_t b, uint32_t mtu, bool cm = false) {
    ConnSpec c;
    c.a = a;
    c.b = b;
    c.mtu = mtu;
    c.cm = cm;
    return c;
}

// One RC connection, WRITEs of 0..8 KB with some immediates; nothing goes wrong.
Scenario clean_write(const ScaleOptions& o) {
    Scenario s;
    s.name = "clean_write";
    s.description = "one RC connection, WRITEs (some with immediate), no impairment";
    s.hosts = ipv4_hosts(2);
    s.conns = {conn(0, 1, 1024)};
    s.workload.msgs_per_conn = scaled(40, o.scale);
    s.workload.ops = {op(OpType::write, 1, 0, 8192, 0.3)};
    return s;
}

Scenario mixed_ops(const ScaleOptions& o) {
    Scenario s;
    s.name = "mixed_ops";
    s.description = "64 connections among 8 hosts, every operation, some UC, some CM, UD traffic";
    s.hosts = ipv4_hosts(8);
    s.random_conns.count = scaled(64, o.scale);
    s.random_conns.uc_fraction = 0.1;
    s.random_conns.cm_fraction = 0.3;
    s.random_conns.near_wrap_fraction = 0.1;
    s.workload.msgs_per_conn = scaled(30, o.scale);
    s.workload.gap_ns = 15'000;
    s.workload.jitter_ns = 5'000;
    s.workload.ops = {op(OpType::send, 3, 0, 8192, 0.3, 0.2), op(OpType::write, 3, 0, 16384, 0.3),
                      op(OpType::read, 2, 0, 16384), op(OpType::cmp_swap, 1, 8, 8),
                      op(OpType::fetch_add, 1, 8, 8)};
    s.ud.count = scaled(50, o.scale);
    // Host traces: a host without a tracer, one tracing the control path only, every third
    // work request signaled, 1% of the data-path records lost.
    s.host_trace.untraced_hosts = {7};
    s.host_trace.datapath_off = {6};
    s.host_trace.unsignaled_every = 3;
    s.host_trace.loss = 0.01;
    return s;
}

// Soft-RoCE source ports (one per sender QP) defeat the sport rule, so pairing comes from
// CM where it was observed, from the IP rule where one connection joins two hosts, and
// not at all where two connections without CM join the same two hosts.
Scenario cm_pairing(const ScaleOptions& o) {
    Scenario s;
    s.name = "cm_pairing";
    s.description = "per-QP source ports: pairs by cm (2), ip (1), unpaired (2)";
    s.hosts = ipv4_hosts(3);
    s.sport_policy = SportPolicy::per_qp;
    s.conns = {conn(0, 1, 1024, true), conn(0, 1, 2048, true), conn(0, 2, 4096), conn(1, 2, 512),
               conn(1, 2, 1024)};
    s.workload.msgs_per_conn = scaled(10, o.scale);
    s.workload.start_ns = 20'000;
    s.workload.ops = {op(OpType::write, 2, 0, 4096), op(OpType::send, 1, 0, 4096),
                      op(OpType::read, 1, 0, 8192)};
    s.host_trace.unsignaled_every = 2;  // the host's view pairs what the dataplane cannot
    return s;
}

Scenario losses(const ScaleOptions& o) {
    Scenario s;
    s.name = "losses";
    s.description =
        "random loss before/after the observer and of ACKs, plus an RNR retry and a fatal NAK";
    s.hosts = ipv4_hosts(2);
    s.conns = {conn(0, 1, 1024), conn(0, 1, 1024), conn(0, 1, 2048), conn(0, 1, 4096)};
    const uint32_t n = scaled(40, o.scale);
    s.workload.msgs_per_conn = n;
    s.workload.gap_ns = 30'000;
    s.workload.ops = {op(OpType::write, 2, 0, 8192, 0.2), op(OpType::send, 1, 0, 8192, 0.2)};
    s.timing.retx_timeout_ns = 200'000;
    s.imp.loss_before = 0.02;
    s.imp.loss_after = 0.02;
    s.imp.ack_loss_before = 0.03;
    // A SEND that meets a receiver without receive buffers twice, and a WRITE to a bad R_Key
    // after which connection 3 stops (its later messages are flushed, never sent).
    const uint32_t k = std::min<uint32_t>(n - 1, 5);  // the explicit messages land after the k-th
    MessageSpec rnr_send{1,     OpType::send, 3000, s.workload.start_ns + k * s.workload.gap_ns + 1,
                         false, false};
    MessageSpec bad_write{3,     OpType::write,
                          2000,  s.workload.start_ns + (n / 2) * s.workload.gap_ns + 1,
                          false, false};
    s.messages = {rnr_send, bad_write};
    s.imp.targets.push_back({Action::rnr, 1, k + 1, 0, 2});
    s.imp.targets.push_back({Action::access_error, 3, n / 2 + 1, 0, 1});
    s.host_trace.loss = 0.02;  // the tracer loses records too: resynchronisation
    return s;
}

Scenario reordering(const ScaleOptions& o) {
    Scenario s;
    s.name = "reordering";
    s.description = "adjacent swaps at the observer and requests sprayed over 3 paths";
    s.hosts = ipv4_hosts(2);
    s.conns = {conn(0, 1, 1024), conn(0, 1, 512), conn(1, 0, 2048)};
    s.workload.msgs_per_conn = scaled(40, o.scale);
    s.workload.ops = {op(OpType::write, 2, 0, 6000, 0.2), op(OpType::send, 1, 0, 6000, 0.2)};
    s.imp.swap = 0.03;
    s.imp.spray_paths = 3;
    s.imp.spray_step_ns = 150;
    s.host_trace.loss = 0.01;
    return s;
}

// A 3-to-1 incast into h3 at 19.5 ms - its queues drain past 20 ms, so that it spans two of
// the correlator's 10 ms congestion bins - and a latency-sensitive flow into h3 from h4, a
// 64-byte WRITE every 40 us for 40 ms, that lives through it: before and after, h3's
// traffic is that flow alone (the baseline); during, the episode names the incast's
// senders as contributors and the flow as a victim (its WRITEs queue behind the incast's
// on h3's link, `receiver_queue`: ~+200 us at its p99, +5 us on average).
Scenario congestion(const ScaleOptions& o) {
    Scenario s;
    s.name = "congestion";
    s.description =
        "3-to-1 incast: CE marks, CNPs back to the senders, paced retransmission-free traffic; "
        "a small-message flow into the same host before, during and after it";
    s.hosts = ipv4_hosts(5);
    s.conns = {conn(0, 3, 4096), conn(1, 3, 4096), conn(2, 3, 4096), conn(0, 3, 1024),
               conn(1, 3, 2048), conn(2, 3, 1024), conn(4, 3, 1024)};
    s.conns.back().workload = false;  // the latency-sensitive flow: its messages below
    s.rate_gbps = 25;
    s.receiver_queue = true;  // h3's link: the flow's WRITEs queue behind the incast's
    constexpr uint64_t kIncastStartNs = 19'500'000, kFlowNs = 40'000'000;
    s.workload.msgs_per_conn = scaled(30, o.scale);
    s.workload.start_ns = kIncastStartNs;
    s.workload.gap_ns = 8'000;
    s.workload.ops = {op(OpType::write, 3, 4096, 32768), op(OpType::read, 1, 1024, 8192)};
    const uint32_t flow = scaled(1000, o.scale);
    for (uint32_t i = 0; i < flow; ++i)
        s.messages.push_back({6, OpType::write, 64, 20'000 + i * (kFlowNs / flow), false, false});
    s.imp.ce_mark = 0.25;
    s.timing.cnp_interval_ns = 20'000;
    s.timing.retx_timeout_ns = 2'000'000;
    return s;
}

// An attacker on h4 (10.0.0.5) against the processes and QPs of h1 and h2, next to normal
// traffic among h0-h3 (docs/insert-gen.md "Attacks"). Connection 0's responder process on
// h1 takes 9 rkey guesses in three connections 100 us apart (an rkey_scan), a stale rkey, a
// write past an MR's end and one into a read-only MR; two lone guesses come more than a
// second apart (no scan). Connection 1's responder QP on h1 gets a WRITE from h4 while in
// use (peer_mismatch) and one spoofed from h2 at the PSN it expects after its last message
// (injected_message); h2 gets a WRITE to a QPN none of its QPs has (unowned_qp).
Scenario attacks(const ScaleOptions& o) {
    Scenario s;
    s.name = "attacks";
    s.description =
        "an attacker guesses rkeys, uses a stale one, writes out of bounds and without the "
        "right, injects from a third host, spoofs a peer and writes to an unowned QPN";
    s.hosts = ipv4_hosts(5);
    s.conns = {conn(0, 1, 1024), conn(2, 1, 1024), conn(0, 2, 2048), conn(3, 1, 4096),
               conn(2, 3, 1024)};
    s.workload.msgs_per_conn = scaled(40, o.scale);
    s.workload.ops = {op(OpType::write, 3, 0, 8192, 0.2), op(OpType::send, 2, 0, 4096),
                      op(OpType::read, 2, 1, 8192), op(OpType::cmp_swap, 1, 8, 8),
                      op(OpType::fetch_add, 1, 8, 8)};
    auto attack = [&](AttackKind kind, uint32_t victim, uint64_t at_ns, uint32_t count = 1) {
        AttackSpec a;
        a.kind = kind;
        a.attacker = 4;
        a.victim = victim;
        a.at_ns = at_ns;
        a.count = count;
        s.attacks.push_back(a);
    };
    constexpr uint64_t kMs = 1'000'000;
    for (uint64_t k = 0; k < 3; ++k) attack(AttackKind::rkey_guess, 0, 2 * kMs + k * kMs / 10, 3);
    attack(AttackKind::stale_rkey, 0, 3 * kMs);
    attack(AttackKind::out_of_bounds, 0, 3 * kMs + kMs / 10);
    attack(AttackKind::access_denied, 0, 3 * kMs + kMs / 5);
    attack(AttackKind::rkey_guess, 0, 1'300 * kMs);
    attack(AttackKind::rkey_guess, 0, 2'600 * kMs);
    attack(AttackKind::peer_mismatch, 1, kMs / 4);
    attack(AttackKind::spoofed_injection, 1, kMs / 2);
    attack(AttackKind::unowned_qp, 2, 4 * kMs);
    // Forgeries that never complete (v1.3: injected whatever the status), spoofed from the
    // peers of connections 3 and 4.
    AttackSpec first;
    first.kind = AttackKind::spoofed_first;
    first.attacker = 4;  // sends it (its MAC); the address is the peer's
    first.victim = 3;
    first.at_ns = kMs / 2;
    first.len = 3 * 4096;
    s.attacks.push_back(first);
    attack(AttackKind::spoofed_unacked, 4, kMs / 2);
    s.host_trace.unsignaled_every = 2;
    return s;
}

Scenario ipv6_vlan_wrap(const ScaleOptions& o) {
    Scenario s;
    s.name = "ipv6_vlan_wrap";
    s.description = "IPv6 hosts behind 802.1Q and QinQ tags, starting PSNs just below 2^24";
    s.hosts = {{ip("fd00::1"), {100}}, {ip("fd00::2"), {100}}, {ip("fd00:0:0:1::3"), {200, 300}}};
    ConnSpec c0 = conn(0, 1, 1024, true);
    c0.psn_a = 0xFFFFF0;
    ConnSpec c1 = conn(2, 0, 256);
    c1.psn_a = 0xFFFFFE;
    ConnSpec c2 = conn(1, 2, 4096);
    c2.psn_a = 0xFFFFFF;
    s.conns = {c0, c1, c2};
    s.workload.msgs_per_conn = scaled(20, o.scale);
    s.workload.ops = {op(OpType::write, 2, 0, 6000, 0.3), op(OpType::send, 1, 0, 3000, 0.2, 0.3),
                      op(OpType::read, 1, 0, 6000), op(OpType::fetch_add, 1, 8, 8)};
    s.ud.count = scaled(10, o.scale);
    s.host_trace.unsignaled_every = 4;
    return s;
}

Scenario malformed_background(const ScaleOptions& o) {
    Scenario s;
    s.name = "malformed_background";
    s.description =
        "RoCE on source port 53, non-RoCE frames and each kind of malformed UDP-4791 frame";
    s.hosts = ipv4_hosts(3);
    s.sport_policy = SportPolicy::fixed;
    s.fixed_sport = 53;  // Wireshark would take it for DNS
    s.conns = {conn(0, 1, 1024), conn(2, 1, 2048)};
    s.workload.msgs_per_conn = scaled(20, o.scale);
    s.workload.ops = {op(OpType::write, 1, 0, 5000), op(OpType::read, 1, 0, 5000)};
    s.background = scaled(200, o.scale);
    const uint32_t k = scaled(5, o.scale);
    s.malformed = {k, k, k, k};
    s.ud.count = scaled(20, o.scale);
    s.host_trace.datapath_off = {2};
    return s;
}

// For benchmarks: many QPs, small single-packet WRITEs, a load that leaves the links
// about a third busy so nothing queues into timeouts.
Scenario large(const ScaleOptions& o) {
    Scenario s;
    s.name = "large";
    s.description = "1M+ packets over 100k QPs (use --qps / --packets), single-packet WRITEs";
    constexpr int kHosts = 16;
    s.hosts = ipv4_hosts(kHosts);
    const uint64_t qps = o.qps ? o.qps : 100'000;
    const uint64_t packets = o.packets ? o.packets : 1'000'000;
    const uint32_t conns = static_cast<uint32_t>(std::max<uint64_t>(1, qps / 2));
    s.random_conns.count = conns;
    s.random_conns.mtu_min = s.random_conns.mtu_max = 1024;
    // Each message is one request and (ACK coalescing aside) one ACK; 2% extra so that
    // coalesced ACKs do not leave the total below the figure asked for.
    const uint64_t want = packets + packets / 50;
    s.workload.msgs_per_conn =
        static_cast<uint32_t>(std::max<uint64_t>(1, (want + 2 * conns - 1) / (2 * conns)));
    s.workload.ops = {op(OpType::write, 1, 64, 1024)};
    constexpr double kLoad = 0.3;
    constexpr double kFrameBits = (600 + 90) * 8.0;  // average request + ACK on the wire
    const double per_host = static_cast<double>(conns) / kHosts;
    s.workload.gap_ns = std::max<uint64_t>(
        20'000, static_cast<uint64_t>(per_host * kFrameBits / (kLoad * s.rate_gbps)));
    s.workload.jitter_ns = s.workload.gap_ns;
    s.workload.start_ns = 10'000;
    s.timing.retx_timeout_ns = 10'000'000;
    return s;
}

struct Entry {
    const char* name;
    Scenario (*make)(const ScaleOptions&);
};
constexpr Entry kBuiltins[] = {
    {"clean_write", clean_write},
    {"mixed_ops", mixed_ops},
    {"cm_pairing", cm_pairing},
    {"losses", losses},
    {"reordering", reordering},
    {"congestion", congestion},
    {"attacks", attacks},
    {"ipv6_vlan_wrap", ipv6_vlan_wrap},
    {"malformed_background", malformed_background},
    {"large", large},
};

}  // namespace

const std::vector<std::string>& builtin_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Entry& e : kBuiltins) v.emplace_back(e.name);
        return v;
    }();
    return names;
}

std::optional<Scenario> builtin_scenario(const std::string& name, const ScaleOptions& opts) {
    for (const Entry& e : kBuiltins)
        if (name == e.name) return e.make(opts);
    return std::nullopt;
}

}  // namespace insert::gen
