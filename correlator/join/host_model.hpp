// The host side of the join (docs/correlation.md section 2): QP incarnations with their
// owner, address, peer and lifetime, memory regions, and per QP the work requests and
// completions the application posted and polled - built from one process's insert-trace
// records in canonical order, whatever order they arrived in.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "correlator/input/records.hpp"

namespace insert::correlate {

inline constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

struct WorkRequest {
    int64_t wall = 0;  // host clock
    uint64_t wr_id = 0;
    uint64_t len = 0;
    int64_t remote_addr = kNone;
    int64_t rkey = kNone;
    int32_t tid = 0;
    uint32_t chain_index = 0;
    Op family = Op::send;
    WrOpcode opcode = WrOpcode::send;
    bool signaled = true;
    uint32_t event = 0;  // its record: an index into the host events
    // Set by the completion rule (docs/correlation.md 4).
    int64_t t_poll = kNone;  // host clock: its own completion's poll (signaled, or failed)
    uint16_t wc_status = 0;
    int64_t completion_event = -1;  // the poll_cq record of its own completion
    // Unsignaled and without a completion of its own: the poll of the signaled completion
    // that covers it (host clock) - information only, the application never saw its end.
    int64_t t_covered = kNone;
};

struct Completion {
    int64_t wall = 0;
    uint64_t wr_id = 0;
    uint32_t event = 0;  // its record: an index into the host events
    int32_t tid = 0;
    uint32_t byte_len = 0;
    uint16_t status = 0;
    WcOpcode opcode = WcOpcode::send_side;
};
// Half a cache line, unpadded: a run holds one per completion polled (fresh memory is the
// costliest thing a batch run touches: docs/performance.md,
// "Hugetlb pages and the VM's first touch").
static_assert(sizeof(Completion) == 32);

struct Incarnation {
    uint32_t host = 0;
    int32_t pid = 0;
    uint64_t qp_obj = 0;
    Comm comm;
    uint64_t cgroup = 0;
    bool has_ip = false;
    Ip ip;
    uint32_t qpn = 0;
    uint64_t pd = 0;
    bool uc = false;
    int64_t t_create = 0;
    int64_t t_end = kForever;  // destroy_qp or process_exit
    bool has_peer = false;
    Ip peer_ip;
    uint32_t dest_qpn = 0;
    bool has_sq_psn = false;
    uint32_t sq_psn = 0;
    bool has_rq_psn = false;
    uint32_t rq_psn = 0;
    bool has_access = false;
    uint32_t qp_access = 0;
    uint32_t process = 0;                      // index into HostModel::processes
    std::vector<WorkRequest> wrs;              // send work requests of SPEC 5 families
    std::vector<Completion> send_completions;  // canonical order
    std::vector<Completion> recv_completions;  // SUCCESS receive completions

    bool alive_at(int64_t t) const { return t_create <= t && t < t_end; }
};

struct MemoryRegion {
    uint64_t pd = 0;
    uint64_t addr = 0;  // the address remote requests use (iova; = addr for ibv_reg_mr)
    uint64_t length = 0;
    uint32_t access = 0;
    uint32_t rkey = 0;
    int64_t t_reg = 0;
    int64_t t_dereg = kForever;
};

struct Process {
    uint32_t host = 0;
    int32_t pid = 0;
    Comm comm;
    uint64_t cgroup = 0;
    int64_t t_exit = kForever;
    std::vector<MemoryRegion> mrs;
};

struct HostModel {
    // Per host event (by its index in the records given to build_host_model): the host time
    // until which the join still needs it - the end of its QP, MR or process for control
    // records, kForever while they live; its own time for records read only once. The live
    // correlator forgets records --ttl after that.
    std::vector<int64_t> needed_until;
    std::vector<Process> processes;
    std::vector<Incarnation> qps;               // sorted by (host name, pid, t_create, qp object)
    uint64_t trace_drops = 0;                   // `lost` records' ringbuf_drops
    std::vector<std::vector<int64_t>> lost_at;  // per host id: times of its `lost` records
    std::vector<int64_t> first_record;          // per host id: its earliest record (kForever)
    uint64_t orphan_records = 0;                // data-path records of a QP the trace never created
};

class HostNames;

// Builds the model from every host record of the input, in any order: the model refers
// to records by their index in `events` (WorkRequest::event, Completion::event,
// needed_until). Processes are independent and built in parallel.
HostModel build_host_model(const HostEvents& events, const HostNames& names);

}  // namespace insert::correlate
