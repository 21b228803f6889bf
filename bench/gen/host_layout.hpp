// Who owns what on the simulated hosts: the processes of each host, which process owns each
// end of a connection, the memory regions (MRs) each process registers for its peers, and
// which connections take the QPN of an earlier connection's QP (QPN reuse).
//
// The simulator asks for it at set-up, because it shapes the traffic: every WRITE, READ and
// atomic targets a registered MR of its responder's process (in bounds, with the remote
// right it needs - normal traffic must raise no security alert in the correlator), and a
// connection that reuses a QPN starts only after the earlier QP's life. It draws from
// random streams of its own, so the simulator's draws (and every other byte of a scenario's
// output) stay what they were. The host traces (host_trace.*) report the same layout.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "bench/gen/scenario.hpp"

namespace insert::gen {

// ibv_access_flags bits, as the host records name them (docs/insert-trace.md).
constexpr uint32_t kAccessLocalWrite = 1, kAccessRemoteWrite = 2, kAccessRemoteRead = 4,
                   kAccessRemoteAtomic = 8;
// The remote access right an RDMA operation needs at its target (0 for SEND).
uint32_t access_needed(OpType op);

struct HostProcess {
    uint16_t host = 0;
    uint32_t pid = 0;
    uint32_t comm = 0;                   // index into kProcessNames
    uint32_t tenant = 0;                 // its cgroup
    bool exits_without_destroy = false;  // its QPs end at process_exit, not destroy_qp
};

struct HostMr {
    uint32_t proc = 0;
    uint64_t addr = 0, length = 0;
    uint32_t lkey = 0, rkey = 0;
    uint32_t access = 0;  // kAccess* bits
};

// Connection `conn` takes, on its side `side` (0: requester, 1: responder), the QPN of
// connection `from`'s side `from_side` on the same host, once that QP is destroyed.
struct QpnReuse {
    uint32_t from = UINT32_MAX;
    uint8_t side = 0, from_side = 0;
    bool active() const { return from != UINT32_MAX; }
};

class HostLayout {
  public:
    static constexpr const char* kProcessNames[] = {"ib_write_bw",   "nccl-proxy", "kv-server",
                                                    "spdk_nvmf_tgt", "mpi-rank",   "rdma-cache",
                                                    "insert-attack"};
    // Processes are named among the first six; the last is the attacker's (attack_plan.*).
    static constexpr uint32_t kWorkloadNames = 6, kAttackerName = 6;

    // `conns`: the connections in simulator order (explicit then random ones); `msgs`: the
    // number of messages each will post.
    void plan(const Scenario& sc, uint64_t seed, std::span<const ConnSpec> conns,
              std::span<const uint32_t> msgs);

    // Global process index (host * processes_per_host + local) owning side `side` of `conn`.
    uint32_t process_of(uint32_t conn, int side) const { return owner_[conn * 2 + side]; }
    const std::vector<HostProcess>& processes() const { return procs_; }
    std::span<const HostMr> mrs_of(uint32_t proc) const {
        return {mrs_.data() + std::size_t{proc} * per_proc_, per_proc_};
    }
    const std::vector<HostMr>& mrs() const { return mrs_; }
    const QpnReuse& reuse(uint32_t conn) const { return reuse_[conn]; }

    // Where a WRITE/READ/atomic of `len` bytes to process `proc` lands: an MR of it with the
    // remote right `op` needs and an 8-byte aligned va with [va, va + len) inside it. `r_va`
    // and `r_key` are the caller's random draws (which MR, where in it).
    struct Target {
        uint64_t va;
        uint32_t rkey;
    };
    Target place(uint32_t proc, OpType op, uint32_t len, uint64_t r_va, uint64_t r_key) const;
    // An rkey that no MR of `proc` has (a scenario's access_error target: attack-like).
    uint32_t unregistered_rkey(uint32_t proc, uint32_t near) const;

    // Attacks (attack_plan.*), after plan(): a connection's side given to another process;
    // a connection's QPN reuse undone; a process named as the attacker.
    void set_owner(uint32_t conn, int side, uint32_t proc) { owner_[conn * 2 + side] = proc; }
    void clear_reuse(uint32_t conn) { reuse_[conn] = QpnReuse{}; }
    void set_attacker(uint32_t proc) { procs_[proc].comm = kAttackerName; }
    // An MR of `mr.proc` beside its own (never a target of place(), not in mrs_of()),
    // registered with them and deregistered at `dereg_ns` (simulation time): what a
    // stale rkey names. Its index in mrs().
    struct RetiredMr {
        uint32_t mr = 0;
        uint64_t dereg_ns = 0;
    };
    uint32_t add_retired_mr(const HostMr& mr, uint64_t dereg_ns);
    const std::vector<RetiredMr>& retired_mrs() const { return retired_; }

  private:
    std::vector<HostProcess> procs_;
    std::vector<uint32_t> owner_;  // (conn, side) -> process
    std::vector<HostMr> mrs_;      // per_proc_ per process
    uint32_t per_proc_ = 0;
    std::vector<QpnReuse> reuse_;
    std::vector<RetiredMr> retired_;
};

}  // namespace insert::gen
