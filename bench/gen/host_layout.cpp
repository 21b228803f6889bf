#include "bench/gen/host_layout.hpp"

#include <algorithm>

#include "bench/gen/rng.hpp"

namespace insert::gen {

namespace {

// Seeds of the layout's own random streams (xored with the scenario seed).
constexpr uint64_t kProcessSeed = 0x50524F4345535345ull;  // "PROCESSE"
constexpr uint64_t kMrSeed = 0x4D454D5245474E53ull;       // "MEMREGNS"
constexpr uint64_t kReuseSeed = 0x51504E5245555345ull;    // "QPNREUSE"

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMrBase = 0x7F0000000000ull;  // where user-space heaps live on x86-64

uint64_t round_up(uint64_t v, uint64_t to) {
    return (v + to - 1) / to * to;
}

// The longest WRITE/READ a scenario can post: every MR holds one, wherever it lands.
uint64_t longest_rdma(const Scenario& sc) {
    uint64_t len = 8;
    for (const OpWeight& o : sc.workload.ops)
        if (o.op == OpType::write || o.op == OpType::read) len = std::max<uint64_t>(len, o.max_len);
    for (const MessageSpec& m : sc.messages)
        if (m.op == OpType::write || m.op == OpType::read) len = std::max<uint64_t>(len, m.len);
    return len;
}

}  // namespace

uint32_t access_needed(OpType op) {
    switch (op) {
        case OpType::write:
            return kAccessRemoteWrite;
        case OpType::read:
            return kAccessRemoteRead;
        case OpType::cmp_swap:
        case OpType::fetch_add:
            return kAccessRemoteAtomic;
        case OpType::send:
            break;
    }
    return 0;
}

void HostLayout::plan(const Scenario& sc, uint64_t seed, std::span<const ConnSpec> conns,
                      std::span<const uint32_t> msgs) {
    const HostTraceSpec& ht = sc.host_trace;
    const uint32_t per_host = ht.processes_per_host;

    // Processes: pids distinct within a host (not across hosts: the correlator must key
    // processes by (host, pid)), a name, a tenant's cgroup.
    Rng prng(seed ^ kProcessSeed);
    procs_.clear();
    for (uint16_t h = 0; h < sc.hosts.size(); ++h) {
        std::vector<uint32_t> taken;
        for (uint32_t p = 0; p < per_host; ++p) {
            HostProcess pr;
            pr.host = h;
            do {
                pr.pid = static_cast<uint32_t>(prng.between(1000, 1000 + 16 * per_host));
            } while (std::find(taken.begin(), taken.end(), pr.pid) != taken.end());
            taken.push_back(pr.pid);
            pr.comm = static_cast<uint32_t>(prng.between(0, kWorkloadNames - 1));
            pr.tenant = static_cast<uint32_t>(prng.between(0, ht.tenants - 1));
            pr.exits_without_destroy = prng.chance(ht.exit_without_destroy);
            procs_.push_back(pr);
        }
    }
    owner_.resize(conns.size() * 2);
    for (std::size_t c = 0; c < conns.size(); ++c) {
        owner_[c * 2] =
            conns[c].a * per_host + static_cast<uint32_t>(prng.between(0, per_host - 1));
        owner_[c * 2 + 1] =
            conns[c].b * per_host + static_cast<uint32_t>(prng.between(0, per_host - 1));
    }

    // MRs: per process, one after another in its address space, each long enough for the
    // longest WRITE/READ. Rights by position: read-write, read-only (k % 3 == 1) and
    // read-write-atomic (k % 3 == 2); the last MR has every right, so each op finds one.
    Rng mrng(seed ^ kMrSeed);
    per_proc_ = ht.mrs_per_process;
    const uint64_t min_len = round_up(longest_rdma(sc), kPage);
    mrs_.clear();
    retired_.clear();
    for (uint32_t p = 0; p < procs_.size(); ++p) {
        uint64_t addr = kMrBase + (mrng.between(0, 1u << 20) << 16);
        const std::size_t first = mrs_.size();
        for (uint32_t k = 0; k < per_proc_; ++k) {
            HostMr mr;
            mr.proc = p;
            mr.addr = addr;
            mr.length = std::max(min_len, kPage << mrng.between(4, 10));  // 64 KiB - 4 MiB
            const uint32_t kind = k + 1 == per_proc_ ? 2 : k % 3;
            mr.access = kAccessLocalWrite | kAccessRemoteRead |
                        (kind != 1 ? kAccessRemoteWrite : 0) |
                        (kind == 2 ? kAccessRemoteAtomic : 0);
            bool unique = false;
            while (!unique) {
                mr.rkey = static_cast<uint32_t>(mrng.next());
                unique = mr.rkey != 0;
                for (std::size_t i = first; i < mrs_.size(); ++i) unique &= mrs_[i].rkey != mr.rkey;
            }
            mr.lkey = mr.rkey;  // mlx5 and rxe hand out equal keys
            mrs_.push_back(mr);
            addr = mr.addr + mr.length + (mrng.between(1, 256) * kPage);
        }
    }

    // QPN reuse: a chosen connection takes, on one side, the QPN of the nearest earlier QP on
    // the same host that no other connection took yet; both need traffic (a QP without any
    // is never created). The new connection's peer is on another host than the old one's:
    // the observer keeps an endpoint's state per source host (semantics.md "Sources"), so
    // each life of the QPN then has its own pairing. (With the same peer host the old
    // pair would stand for the new connection's traffic too, and the truth observer
    // attributes a READ response by its message, not by the pair: not generated.) Every
    // life of one QPN has a peer host of its own.
    reuse_.assign(conns.size(), QpnReuse{});
    if (ht.qpn_reuse <= 0) return;
    Rng rrng(seed ^ kReuseSeed);
    std::vector<bool> taken(conns.size() * 2, false);
    // Per (conn, side): the peer hosts of every life of its QPN so far.
    std::vector<std::vector<uint32_t>> peers(conns.size() * 2);
    for (std::size_t c = 0; c < conns.size(); ++c) {
        peers[c * 2] = {conns[c].b};
        peers[c * 2 + 1] = {conns[c].a};
    }
    auto host_of = [&](std::size_t c, int side) { return side == 0 ? conns[c].a : conns[c].b; };
    auto explicit_qpn = [&](std::size_t c, int side) {
        return side == 0 ? conns[c].qpn_a.has_value() : conns[c].qpn_b.has_value();
    };
    for (std::size_t c = 1; c < conns.size(); ++c) {
        if (!rrng.chance(ht.qpn_reuse)) continue;
        const int side = static_cast<int>(rrng.between(0, 1));
        if (msgs[c] == 0 || explicit_qpn(c, side)) continue;
        for (std::size_t p = c; p-- > 0;) {
            if (msgs[p] == 0) continue;
            int from_side = -1;
            const uint32_t peer = host_of(c, 1 - side);
            for (int s = 0; s < 2 && from_side < 0; ++s) {
                const std::vector<uint32_t>& used = peers[p * 2 + s];
                if (host_of(p, s) == host_of(c, side) && !taken[p * 2 + s] &&
                    std::find(used.begin(), used.end(), peer) == used.end())
                    from_side = s;
            }
            if (from_side < 0) continue;
            taken[p * 2 + from_side] = true;
            peers[c * 2 + side] = peers[p * 2 + from_side];
            peers[c * 2 + side].push_back(peer);
            reuse_[c] = {static_cast<uint32_t>(p), static_cast<uint8_t>(side),
                         static_cast<uint8_t>(from_side)};
            break;
        }
    }
}

HostLayout::Target HostLayout::place(uint32_t proc, OpType op, uint32_t len, uint64_t r_va,
                                     uint64_t r_key) const {
    const uint32_t need = access_needed(op);
    const std::span<const HostMr> mrs = mrs_of(proc);
    std::size_t allowed = 0;
    for (const HostMr& mr : mrs) allowed += (mr.access & need) == need;
    std::size_t pick = r_key % allowed;
    for (const HostMr& mr : mrs) {
        if ((mr.access & need) != need || pick-- > 0) continue;
        const uint64_t slots = (mr.length - len) / 8 + 1;  // 8-aligned starts that fit
        return {mr.addr + (r_va % slots) * 8, mr.rkey};
    }
    return {0, 0};  // unreachable: the last MR has every right
}

uint32_t HostLayout::add_retired_mr(const HostMr& mr, uint64_t dereg_ns) {
    const auto index = static_cast<uint32_t>(mrs_.size());
    mrs_.push_back(mr);
    retired_.push_back({index, dereg_ns});
    return index;
}

uint32_t HostLayout::unregistered_rkey(uint32_t proc, uint32_t near) const {
    uint32_t k = near ^ 0x00A5A5A5u;
    for (bool clash = true; clash;) {
        clash = k == 0;
        for (const HostMr& mr : mrs_of(proc)) clash |= mr.rkey == k;
        for (const RetiredMr& r : retired_)
            clash |= mrs_[r.mr].proc == proc && mrs_[r.mr].rkey == k;
        if (clash) ++k;
    }
    return k;
}

}  // namespace insert::gen
