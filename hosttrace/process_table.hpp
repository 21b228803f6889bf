// What the tracer knows about each traced process: its verbs contexts (device, GIDs,
// whether the provider's data-path functions are already probed), QPs and MRs. Built from
// the event stream; a process that exits is reaped and its state released.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "verbs_trace.h"

namespace insert::hosttrace {

using Gid = std::array<uint8_t, 16>;

struct ContextState {
    std::string device;
    std::map<int, Gid> gids;  // by GID index, as queried by the application
    bool ops_resolved = false;
};

struct QpState {
    uint64_t ctx = 0;
    uint32_t qpn = 0;
    int state = 0;        // enum ibv_qp_state; RESET after create
    int sgid_index = -1;  // from the address vector at RTR
};

struct ProcessState {
    std::string comm;
    std::unordered_map<uint64_t, ContextState> contexts;
    std::unordered_map<uint64_t, QpState> qps;   // by struct ibv_qp *
    std::unordered_map<uint64_t, uint32_t> mrs;  // struct ibv_mr * -> rkey
    // QPs destroyed recently: softverbs' trace records reach the tracer in batches, so the
    // last posts and completions of a QP can follow its destroy_qp (whose probe fires at
    // once); their `ip` still comes from the QP's address vector. Bounded: cleared when it
    // reaches kMaxDestroyedQps (older records then fall back to the context's GID).
    std::unordered_map<uint64_t, QpState> destroyed_qps;
};

struct ExitedProcess {
    pid_t pid;
    std::string comm;
    size_t open_qps;
    size_t open_mrs;
};

// Text form of a GID: the IPv4 address for IPv4-mapped GIDs (RoCEv2 over IPv4), else IPv6;
// none for the zero GID.
std::optional<std::string> gid_to_ip(const Gid& gid);

// The same text written in place, for a record writer (JsonLine::ip): `out` has room for
// INET6_ADDRSTRLEN bytes; returns the length. The GID is not zero.
struct GidIp {
    const Gid& gid;
    std::size_t format(char* out) const;
};

class ProcessTable {
  public:
    // Applies an event to the state. Returns the previous QP state for modify_qp events.
    int apply(const insert_trace_event& e);

    // The host's RDMA IP for an object of context `ctx` (the GID the QP's address vector
    // uses when known, else the lowest queried non-zero GID of the context).
    std::optional<std::string> host_ip(pid_t pid, uint64_t ctx, uint64_t qp) const;
    // The GID whose text that is (never the zero GID), or nullptr: for every record, without
    // a string made.
    const Gid* host_gid(pid_t pid, uint64_t ctx, uint64_t qp) const;

    // True once per (pid, ctx): the caller resolves that context's ops table.
    bool claim_context_for_ops(pid_t pid, uint64_t ctx);

    // Processes no longer alive; their state is dropped.
    std::vector<ExitedProcess> reap_exited();
    // The same in two steps, so that the caller can read the ring buffer in between: what
    // a process reported before it died is in the ring when exited() sees it gone, and is
    // decoded before its process_exit record.
    std::vector<pid_t> exited() const;
    std::vector<ExitedProcess> reap(const std::vector<pid_t>& pids);

    static constexpr size_t kMaxDestroyedQps = 4096;

    size_t size() const { return procs_.size(); }

  private:
    std::unordered_map<pid_t, ProcessState> procs_;
};

}  // namespace insert::hosttrace
