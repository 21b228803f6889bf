#include "bench/gen/attack_plan.hpp"

#include <algorithm>

#include "bench/gen/simulator.hpp"
#include "dataplane/proto/psn.hpp"

namespace insert::gen {

namespace {

constexpr uint64_t kAttackSeed = 0x41545441434B5321ull;  // "ATTACKS!"
constexpr uint32_t kAttackMtu = 4096;  // the attack connections' path MTU: WRITE Only
constexpr uint32_t kMaxGuesses = 64;
constexpr uint64_t kPage = 4096;
// A stale MR is deregistered this long before its attack, beyond the QP life margin: more
// than any error of a correlator's clock estimate (host_trace.hpp, life_margin_ns()).
constexpr uint64_t kRetireLeadNs = 20'000;
constexpr uint32_t kNoIndex = UINT32_MAX;  // MsgInfo::index of an injected message

bool rdma_write_right(const HostMr& mr) {
    return (mr.access & kAccessRemoteWrite) != 0;
}

}  // namespace

std::string validate_attacks(const Scenario& sc, const std::vector<uint32_t>& per_conn) {
    const std::size_t nh = sc.hosts.size();
    for (std::size_t i = 0; i < sc.attacks.size(); ++i) {
        const AttackSpec& a = sc.attacks[i];
        const std::string p = "attacks[" + std::to_string(i) + "]";
        // The victim is an explicit connection: its hosts are known before the run.
        if (a.victim >= sc.conns.size()) return p + ".victim: no such explicit connection";
        const ConnSpec& v = sc.conns[a.victim];
        const bool inject = a.kind >= AttackKind::peer_mismatch;
        const bool spoofed = a.kind == AttackKind::spoofed_injection ||
                             a.kind == AttackKind::spoofed_first ||
                             a.kind == AttackKind::spoofed_unacked;
        // Spoofed kinds: the host that sends the forgery (its MAC), whatever address it claims.
        if (a.attacker >= nh) return p + ".attacker: no such host";
        if (!spoofed) {
            if (a.attacker == v.b) return p + ".attacker: the victim's own host";
            if (sc.hosts[a.attacker].ip.is_v4() != sc.hosts[v.b].ip.is_v4())
                return p + ".attacker: not of the victim's address family";
        }
        if (a.kind == AttackKind::peer_mismatch && a.attacker == v.a)
            return p + ".attacker: the victim's peer (peer_mismatch needs a third host)";
        if (a.kind == AttackKind::spoofed_first) {
            if (a.len <= v.mtu || a.len > 64 * v.mtu)
                return p + ".len: more than the path MTU, at most 64 of it (a WRITE First)";
        } else if (a.len == 0 || a.len > (inject ? v.mtu : kAttackMtu)) {
            return p + ".len: 1 to the path MTU (one WRITE Only packet)";
        }
        if (a.kind == AttackKind::out_of_bounds && a.len < 16)
            return p + ".len: at least 16 (half of it past the MR's end)";
        if (a.kind == AttackKind::rkey_guess && (a.count == 0 || a.count > kMaxGuesses))
            return p + ".count: 1..64";
        if (a.kind == AttackKind::access_denied && sc.host_trace.mrs_per_process < 3)
            return p + ": needs an MR without REMOTE_WRITE (host_trace.mrs_per_process >= 3)";
        if (a.kind == AttackKind::unowned_qp && a.qpn && (*a.qpn < 2 || *a.qpn > proto::kPsnMask))
            return p + ".qpn: 2..0xFFFFFF";
        if ((a.kind == AttackKind::peer_mismatch || spoofed) && per_conn[a.victim] == 0)
            return p + ".victim: the connection has no traffic (its QPs never exist)";
        if (spoofed) {
            if (v.transport != ConnTransport::rc) return p + ".victim: an RC connection";
            for (const TargetSpec& t : sc.imp.targets)
                if (t.conn == a.victim && t.action == Action::access_error)
                    return p + ".victim: its QP goes to error (access_error target)";
        }
    }
    return {};
}

AttackPlan::AttackPlan(const Scenario& sc, uint64_t seed) : sc_(sc), rng_(seed ^ kAttackSeed) {}

void AttackPlan::add_connections(std::vector<ConnSpec>& specs) {
    first_conn_ = static_cast<uint32_t>(specs.size());
    attack_conn_.assign(sc_.attacks.size(), UINT32_MAX);
    for (std::size_t i = 0; i < sc_.attacks.size(); ++i) {
        const AttackSpec& a = sc_.attacks[i];
        if (!verbs_attack(a)) continue;
        ConnSpec c;
        c.a = a.attacker;
        c.b = sc_.conns[a.victim].b;
        c.mtu = kAttackMtu;
        const auto conn = static_cast<uint32_t>(specs.size());
        attack_conn_[i] = conn;
        specs.push_back(c);
        // Its WRITEs, posted together (the NIC takes them in order, back to back).
        const uint32_t n = a.kind == AttackKind::rkey_guess ? a.count : 1;
        for (uint32_t k = 0; k < n; ++k)
            messages_.push_back({conn, OpType::write, a.len, a.at_ns, false, false});
    }
}

void AttackPlan::assign(HostLayout& layout) {
    const uint32_t per_host = sc_.host_trace.processes_per_host;
    for (std::size_t i = 0; i < sc_.attacks.size(); ++i) {
        const AttackSpec& a = sc_.attacks[i];
        const uint32_t conn = attack_conn_[i];
        if (conn == UINT32_MAX) continue;
        // The attacker: its host's first process; the victim: the process that owns the
        // victim connection's responder QP, which accepts the attacker's connection.
        const uint32_t attacker = a.attacker * per_host;
        const uint32_t victim = layout.process_of(a.victim, 1);
        layout.set_attacker(attacker);
        layout.set_owner(conn, 0, attacker);
        layout.set_owner(conn, 1, victim);
        layout.clear_reuse(conn);  // starts when the attack says
        if (a.kind != AttackKind::stale_rkey) continue;
        // An MR the victim registered with its others and deregistered before the attack,
        // after its last MR in its address space, with an rkey none of its MRs has.
        const std::span<const HostMr> own = layout.mrs_of(victim);
        HostMr mr = own.back();
        mr.addr = own.back().addr + own.back().length + kPage * rng_.between(1, 64);
        mr.length = own.back().length;
        mr.access = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
        mr.rkey = layout.unregistered_rkey(victim, static_cast<uint32_t>(rng_.next()));
        mr.lkey = mr.rkey;
        const uint64_t lead = kRetireLeadNs + sc_.host_trace.life_margin_ns();
        layout.add_retired_mr(mr, a.at_ns > lead ? a.at_ns - lead : 0);
    }
}

std::size_t AttackPlan::injected_messages() const {
    std::size_t n = 0;
    for (const AttackSpec& a : sc_.attacks) n += !verbs_attack(a);
    return n;
}

std::vector<Injection> AttackPlan::apply(HugeVector<MsgInfo>& msgs,
                                         const HugeVector<ConnInfo>& conns,
                                         const HostLayout& layout) {
    std::vector<Injection> out;
    uint32_t guessed = 0;  // guesses so far: each attack tries rkeys no earlier one tried
    std::size_t retired = 0;
    for (std::size_t i = 0; i < sc_.attacks.size(); ++i) {
        const AttackSpec& a = sc_.attacks[i];
        const uint32_t victim_proc = layout.process_of(a.victim, 1);
        const std::span<const HostMr> own = layout.mrs_of(victim_proc);
        auto registered = [&](uint32_t rkey) {
            for (const HostMr& mr : layout.mrs())
                if (mr.proc == victim_proc && mr.rkey == rkey) return true;
            return false;
        };
        if (const uint32_t conn = attack_conn_[i]; conn != UINT32_MAX) {
            const ConnInfo& ci = conns[conn];
            for (uint32_t k = 0; k < ci.num_msgs; ++k) {
                MsgInfo& m = msgs[ci.first_msg + k];
                // The simulator placed each WRITE in an MR of the victim with REMOTE_WRITE
                // (what the victim advertised); the attack changes what it must not.
                const HostMr* placed = nullptr;
                for (const HostMr& mr : own)
                    if (mr.rkey == m.rkey) placed = &mr;
                switch (a.kind) {
                    case AttackKind::rkey_guess:  // the advertised rkey + 1, + 2, ...
                        do {
                            m.rkey = placed->rkey + ++guessed;
                        } while (m.rkey == 0 || registered(m.rkey));
                        break;
                    case AttackKind::stale_rkey: {
                        const HostMr& mr = layout.mrs()[layout.retired_mrs()[retired].mr];
                        m.rkey = mr.rkey;
                        m.va = mr.addr + 64;
                        break;
                    }
                    case AttackKind::out_of_bounds:  // half of it past the MR's end
                        m.va = placed->addr + placed->length - (m.len / 2) / 8 * 8;
                        break;
                    case AttackKind::access_denied:
                        for (const HostMr& mr : own) {
                            if (rdma_write_right(mr)) continue;
                            m.rkey = mr.rkey;
                            m.va = mr.addr + 64;
                            break;
                        }
                        break;
                    default:
                        break;
                }
                m.access_error = true;  // its responder answers NAK "remote access error"
            }
            retired += a.kind == AttackKind::stale_rkey;
            continue;
        }
        // An injection: one WRITE Only of `len` bytes, in an MR of the victim with
        // REMOTE_WRITE (a valid target: only where the packet comes from is wrong).
        const ConnInfo& vc = conns[a.victim];
        MsgInfo m;
        m.conn = a.victim;
        m.index = kNoIndex;
        m.op = OpType::write;
        m.len = a.len;
        const uint64_t r_va = rng_.between(0, 1u << 30), r_key = rng_.next();
        const HostLayout::Target at = layout.place(victim_proc, OpType::write, a.len, r_va, r_key);
        m.va = at.va;
        m.rkey = at.rkey;
        m.psn_first = static_cast<uint32_t>(rng_.between(0, proto::kPsnMask));
        Injection inj;
        inj.kind = a.kind;
        inj.conn = a.victim;
        inj.src_host = static_cast<uint16_t>(a.attacker);
        inj.nic_host = static_cast<uint16_t>(a.attacker);
        inj.dst_host = static_cast<uint16_t>(vc.spec.b);
        inj.dest_qpn = vc.qpn_b;
        inj.at_ns = a.at_ns;
        const uint64_t first_post = msgs[vc.first_msg].post_ns;
        const uint64_t last_post = msgs[vc.first_msg + vc.num_msgs - 1].post_ns;
        switch (a.kind) {
            case AttackKind::peer_mismatch:  // while the connection is in use
                inj.at_ns = std::clamp(a.at_ns, first_post, last_post);
                break;
            case AttackKind::spoofed_injection:  // its PSN: the one expected when sent
            case AttackKind::spoofed_first:
            case AttackKind::spoofed_unacked:
                // The peer's address, sent from the attacker's host (its MAC).
                inj.src_host = static_cast<uint16_t>(vc.spec.a);
                break;
            case AttackKind::unowned_qp: {
                if (a.qpn) {
                    inj.dest_qpn = *a.qpn;
                    break;
                }
                // Beyond every QPN of the host's connections: never a QP's.
                uint32_t top = vc.qpn_b;
                for (const ConnInfo& c : conns) {
                    if (c.spec.a == vc.spec.b) top = std::max(top, c.qpn_a);
                    if (c.spec.b == vc.spec.b) top = std::max(top, c.qpn_b);
                }
                inj.dest_qpn = (top + 0x100) & proto::kPsnMask;
                break;
            }
            default:
                break;
        }
        m.post_ns = inj.at_ns;
        inj.uid = static_cast<uint32_t>(msgs.size());
        msgs.push_back(m);
        out.push_back(inj);
    }
    return out;
}

}  // namespace insert::gen
