#include "bench/gen/scenario.hpp"

#include <set>

#include "bench/gen/attack_plan.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::gen {

const char* op_name(OpType op) {
    static constexpr const char* kNames[] = {"SEND", "WRITE", "READ", "CMP_SWAP", "FETCH_ADD"};
    return kNames[static_cast<int>(op)];
}

const char* attack_kind_name(AttackKind k) {
    static constexpr const char* kNames[] = {"rkey_guess",    "stale_rkey",    "out_of_bounds",
                                             "access_denied", "peer_mismatch", "spoofed_injection",
                                             "unowned_qp",    "spoofed_first", "spoofed_unacked"};
    return kNames[static_cast<int>(k)];
}

namespace {

bool power_of_two_mtu(uint32_t mtu) {
    return mtu >= 256 && mtu <= 4096 && (mtu & (mtu - 1)) == 0;
}
bool probability(double p) {
    return p >= 0.0 && p <= 1.0;
}

std::string validate_host_trace(const Scenario& s, const std::vector<uint32_t>& per_conn) {
    const HostTraceSpec& h = s.host_trace;
    const std::size_t nh = s.hosts.size();
    constexpr int64_t kMaxOffset = 1'000'000'000'000;  // 1000 s: far beyond any real clock
    if (h.clock_offset_max_ns < 0 || h.clock_offset_max_ns > kMaxOffset)
        return "host_trace.clock_offset_max_ns: 0..10^12";
    if (!h.clock_offsets_ns.empty() && h.clock_offsets_ns.size() != nh)
        return "host_trace.clock_offsets_ns: one per host";
    for (int64_t o : h.clock_offsets_ns)
        if (o < -kMaxOffset || o > kMaxOffset)
            return "host_trace.clock_offsets_ns: |offset| <= 10^12";
    constexpr uint64_t kMaxDelay = 1'000'000'000;
    if (h.post_to_tx_ns > kMaxDelay || h.post_to_tx_jitter_ns > kMaxDelay ||
        h.poll_delay_ns > kMaxDelay || h.poll_jitter_ns > kMaxDelay ||
        h.setup_lead_ns > kMaxDelay || h.reuse_gap_ns > kMaxDelay)
        return "host_trace: delays are at most 10^9 ns";
    if (h.setup_lead_ns < 20'000)
        return "host_trace.setup_lead_ns: at least 20000 (a QP's set-up takes 8 us)";
    if (h.unsignaled_every == 0) return "host_trace.unsignaled_every: at least 1";
    if (!probability(h.loss) || !probability(h.exit_without_destroy) || !probability(h.qpn_reuse))
        return "host_trace: loss, exit_without_destroy and qpn_reuse must be in [0, 1]";
    if (h.processes_per_host == 0 || h.processes_per_host > 64)
        return "host_trace.processes_per_host: 1..64";
    if (h.tenants == 0 || h.tenants > 64) return "host_trace.tenants: 1..64";
    if (h.mrs_per_process == 0 || h.mrs_per_process > 16)
        return "host_trace.mrs_per_process: 1..16";
    for (uint32_t x : h.untraced_hosts)
        if (x >= nh) return "host_trace.untraced_hosts: no such host";
    for (uint32_t x : h.datapath_off)
        if (x >= nh) return "host_trace.datapath_off: no such host";
    for (std::size_t i = 0; i < h.lost_records.size(); ++i) {
        const TraceLoss& l = h.lost_records[i];
        const std::string p = "host_trace.lost_records[" + std::to_string(i) + "]";
        if (l.conn >= per_conn.size()) return p + ".conn: no such connection";
        if (l.msg >= per_conn[l.conn]) return p + ".msg: the connection has fewer messages";
    }
    return {};
}

}  // namespace

std::string validate(const Scenario& s) {
    const std::size_t nh = s.hosts.size();
    if (!(s.rate_gbps > 0.0 && s.rate_gbps <= 10'000.0))
        return "link.rate_gbps: must be in (0, 10000]";
    std::set<proto::IpAddress> ips;
    for (std::size_t i = 0; i < nh; ++i) {
        if (!ips.insert(s.hosts[i].ip).second)
            return "hosts[" + std::to_string(i) + "].ip: duplicate address";
        if (s.hosts[i].vlans.size() > 2)
            return "hosts[" + std::to_string(i) + "].vlans: at most 2 tags";
    }
    const std::size_t n_conns = s.conns.size() + s.random_conns.count;
    if (n_conns > 0 && nh < 2) return "hosts: connections need at least 2 hosts";
    if (s.ud.count > 0 && nh < 2) return "ud: UD traffic needs at least 2 hosts";
    if ((s.background > 0 ||
         s.malformed[0] + s.malformed[1] + s.malformed[2] + s.malformed[3] > 0) &&
        nh < 1)
        return "hosts: background/malformed frames need at least 1 host";
    if (s.ud.max_len > 4096) return "ud.max_len: at most 4096";
    if (s.sport_policy == SportPolicy::fixed && s.fixed_sport == 0)
        return "fixed_sport: must be 1..65535";
    for (std::size_t i = 0; i < s.conns.size(); ++i) {
        const ConnSpec& c = s.conns[i];
        const std::string p = "connections[" + std::to_string(i) + "]";
        if (c.a >= nh || c.b >= nh || c.a == c.b)
            return p + ": a and b must be two different host indexes";
        if (s.hosts[c.a].ip.is_v4() != s.hosts[c.b].ip.is_v4())
            return p + ": hosts of different address families";
        if (!power_of_two_mtu(c.mtu)) return p + ".mtu: one of 256 512 1024 2048 4096";
        if (c.psn_a && *c.psn_a > proto::kPsnMask) return p + ".psn_a: 24-bit";
        if (c.psn_b && *c.psn_b > proto::kPsnMask) return p + ".psn_b: 24-bit";
        if (c.qpn_a && (*c.qpn_a < 2 || *c.qpn_a > proto::kPsnMask))
            return p + ".qpn_a: 2..0xFFFFFF";
        if (c.qpn_b && (*c.qpn_b < 2 || *c.qpn_b > proto::kPsnMask))
            return p + ".qpn_b: 2..0xFFFFFF";
        if (c.cm && c.transport != ConnTransport::rc)
            return p + ".cm: only RC connections use CM here";
    }
    // Explicit QPNs must not collide with each other on one host.
    std::set<std::pair<uint32_t, uint32_t>> qpns;
    for (std::size_t i = 0; i < s.conns.size(); ++i) {
        const ConnSpec& c = s.conns[i];
        if (c.qpn_a && !qpns.insert({c.a, *c.qpn_a}).second)
            return "connections[" + std::to_string(i) + "].qpn_a: duplicate";
        if (c.qpn_b && !qpns.insert({c.b, *c.qpn_b}).second)
            return "connections[" + std::to_string(i) + "].qpn_b: duplicate";
    }
    const RandomConnections& rc = s.random_conns;
    if (rc.count > 0) {
        if (!power_of_two_mtu(rc.mtu_min) || !power_of_two_mtu(rc.mtu_max) ||
            rc.mtu_min > rc.mtu_max)
            return "random_connections.mtu_min/mtu_max: powers of two in 256..4096, min <= max";
        if (!probability(rc.uc_fraction) || !probability(rc.cm_fraction) ||
            !probability(rc.near_wrap_fraction))
            return "random_connections: fractions must be in [0, 1]";
        bool v4 = false, v6 = false;
        for (const HostSpec& h : s.hosts) (h.ip.is_v4() ? v4 : v6) = true;
        for (const HostSpec& h : s.hosts) {
            std::size_t same = 0;
            for (const HostSpec& o : s.hosts) same += o.ip.is_v4() == h.ip.is_v4();
            if (same < 2)
                return "random_connections: every host needs a peer of its address family";
        }
        (void)v4, (void)v6;
    }
    if (s.ud.count > 0)
        for (const HostSpec& h : s.hosts) {
            std::size_t same = 0;
            for (const HostSpec& o : s.hosts) same += o.ip.is_v4() == h.ip.is_v4();
            if (same < 2) return "ud: every host needs a peer of its address family";
        }
    const Workload& w = s.workload;
    if (w.msgs_per_conn > 0 && w.ops.empty())
        return "workload.ops: at least one op when msgs_per_conn > 0";
    for (std::size_t i = 0; i < w.ops.size(); ++i) {
        const OpWeight& o = w.ops[i];
        const std::string p = "workload.ops[" + std::to_string(i) + "]";
        if (!(o.weight >= 0)) return p + ".weight: must be >= 0";
        if (o.min_len > o.max_len) return p + ": min_len > max_len";
        if (o.max_len > (1u << 30)) return p + ".max_len: at most 2^30";
        if (!probability(o.imm) || !probability(o.inv)) return p + ": imm/inv are probabilities";
    }
    std::vector<uint32_t> per_conn(n_conns, w.msgs_per_conn);
    for (std::size_t i = 0; i < s.conns.size(); ++i)
        if (!s.conns[i].workload) per_conn[i] = 0;  // its explicit messages only
    for (std::size_t i = 0; i < s.messages.size(); ++i) {
        const MessageSpec& m = s.messages[i];
        const std::string p = "messages[" + std::to_string(i) + "]";
        if (m.conn >= n_conns) return p + ".conn: no such connection";
        if (m.len > (1u << 30)) return p + ".len: at most 2^30";
        if (m.conn < s.conns.size() && s.conns[m.conn].transport == ConnTransport::uc &&
            m.op != OpType::send && m.op != OpType::write)
            return p + ".op: UC carries SEND and WRITE only";
        if (m.inv && (m.op != OpType::send || m.imm)) return p + ".inv: only a SEND without imm";
        if (m.inv && m.conn < s.conns.size() && s.conns[m.conn].transport == ConnTransport::uc)
            return p + ".inv: UC has no SEND with invalidate";
        if (m.imm && m.op != OpType::send && m.op != OpType::write)
            return p + ".imm: only SEND and WRITE";
        ++per_conn[m.conn];
    }
    const Impairments& im = s.imp;
    if (!probability(im.loss_before) || !probability(im.loss_after) || !probability(im.swap) ||
        !probability(im.ce_mark) || !probability(im.ack_loss_before))
        return "impairments: rates must be in [0, 1]";
    if (im.loss_before + im.loss_after > 0.5)
        return "impairments: loss rates above 50% never converge";
    if (im.spray_paths == 0 || im.spray_paths > 64) return "impairments.spray_paths: 1..64";
    for (std::size_t i = 0; i < im.targets.size(); ++i) {
        const TargetSpec& t = im.targets[i];
        const std::string p = "impairments.targets[" + std::to_string(i) + "]";
        if (t.conn >= n_conns) return p + ".conn: no such connection";
        const bool ack = t.action == Action::drop_ack_before || t.action == Action::drop_ack_after;
        if (!ack && t.msg >= per_conn[t.conn]) return p + ".msg: the connection has fewer messages";
        if (t.count == 0 || t.count > 7) return p + ".count: 1..7 (the RNR retry limit)";
    }
    if (std::string e = validate_attacks(s, per_conn); !e.empty()) return e;
    return validate_host_trace(s, per_conn);
}

}  // namespace insert::gen
