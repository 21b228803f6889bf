// The host traces of a simulated run: what insert-trace (docs/insert-trace.md "Output")
// would have recorded on every simulated host - processes opening the device, registering
// their MRs, creating and connecting QPs (create_qp, modify_qp INIT/RTR/RTS), posting work
// (post_send, post_recv), polling completions (poll_cq), tearing down (destroy_qp, dereg_mr,
// process_exit) - each on its host's own clock, with the records a tracer loses.
//
// Built after the simulation from what it recorded (host_events.hpp) and the host layout
// (host_layout.hpp), with random streams of its own: asking for host traces changes no byte
// of the pcap or the truth. The model is truthful to the simulation: a work request is
// posted before the NIC takes it, a completion is polled after the NIC completed it, a
// receive completion after the responder accepted the message. docs/insert-gen.md "Host
// traces" describes it; host_trace_json.* writes it, e2e_truth.* joins it with the truth.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bench/gen/host_events.hpp"
#include "bench/gen/host_layout.hpp"
#include "bench/gen/huge_vector.hpp"
#include "bench/gen/scenario.hpp"

namespace insert::gen {

class Simulator;
struct MsgInfo;

// One record kind each; the order is the order of a QP's set-up within one nanosecond.
enum class HostRec : uint8_t {
    trace_start,
    open_device,
    query_gid,
    alloc_pd,
    create_cq,
    reg_mr,
    create_qp,
    modify_init,
    modify_rtr,
    modify_rts,
    post_recv,
    post_send,
    poll_send,  // poll_cq returning a send queue completion (requester)
    poll_recv,  // poll_cq returning a receive completion (responder)
    destroy_qp,
    dereg_mr,
    lost,
    process_exit,
};

// 24 bytes: on `large` there are ~1.6 million of them.
struct HostRecord {
    int64_t wall_ns = 0;  // the host's clock (CLOCK_REALTIME of the traced host)
    uint32_t ref = 0;     // by kind: host (trace_start), process, MR, QP, message uid, drops
    uint32_t aux = 0;     // lost: drops so far; post_recv/poll_recv: the receive's ordinal
    uint32_t proc = 0;    // the process (trace_start, lost: kNoProcess)
    uint16_t host = 0;
    HostRec kind = HostRec::trace_start;
    uint8_t flags = 0;  // post_send: kSignaled
};
static_assert(sizeof(HostRecord) == 24);
constexpr uint8_t kSignaled = 1;
constexpr uint32_t kNoProcess = UINT32_MAX;

// A QP as its owner created it: one per (connection, side) with traffic; index conn * 2 + side.
struct HostQp {
    uint32_t conn = 0;
    uint8_t side = 0;  // 0: requester, 1: responder
    bool exists = false;
    bool uc = false;
    bool destroyed = false;  // by destroy_qp (else it ends at its process's exit)
    uint32_t proc = 0;
    uint64_t ptr = 0;  // the `qp` object
    uint32_t qpn = 0;
    uint16_t peer_host = 0;
    uint32_t dest_qpn = 0, sq_psn = 0, rq_psn = 0, mtu = 0;
    uint64_t wr_base = 0;               // wr_ids are slots of a ring of 256 from here
    int64_t create_ns = 0, end_ns = 0;  // simulation time: create_qp, destroy/exit
};

// Per simulated host.
struct TraceHost {
    bool traced = true;
    bool datapath = true;
    bool ip_at_create = true;  // false: create_qp has `ip: null` (softverbs before a GID query)
    int64_t theta_ns = 0;      // host clock minus observer clock
    int64_t wall_offset_ns = 0;
    uint64_t drops = 0;  // data-path records lost
};

// ibv_wr_opcode / ibv_wc_opcode names as insert-trace prints them.
enum class WrOpcode : uint8_t {
    send,
    send_with_imm,
    send_with_inv,
    rdma_write,
    rdma_write_with_imm,
    rdma_read,
    atomic_cmp_and_swp,
    atomic_fetch_and_add
};
enum class WcOpcode : uint8_t {
    send,
    rdma_write,
    rdma_read,
    comp_swap,
    fetch_add,
    recv,
    recv_rdma_with_imm
};
const char* wr_opcode_name(WrOpcode op);
const char* wc_opcode_name(WcOpcode op);
const char* wc_status_name(WcStatus s);  // SUCCESS, REM_ACCESS_ERR, WR_FLUSH_ERR
uint32_t wc_status_code(WcStatus s);     // ibv_wc_status values

// The fields of a post_send record.
struct WorkRequest {
    uint64_t wr_id = 0;
    WrOpcode opcode = WrOpcode::rdma_write;
    bool signaled = false;
    uint32_t send_flags = 0;
    uint32_t len = 0;
    std::optional<uint64_t> remote_addr;
    std::optional<uint32_t> rkey, imm;
};

// The fields of a poll_cq record.
struct Completion {
    uint64_t wr_id = 0;
    WcStatus status = WcStatus::success;
    WcOpcode opcode = WcOpcode::send;
    uint32_t byte_len = 0;
    std::optional<uint32_t> imm;
    uint32_t wc_flags = 0;
};

class HostTrace {
  public:
    static constexpr uint32_t kRecvSlots = 256;
    static constexpr uint64_t kRecvBufferBytes = 65536;

    // After the simulation ran with Simulator::record_host_events().
    HostTrace(const Scenario& sc, const Simulator& sim, uint64_t seed);

    // Every record of every traced host, by host, then by the host's clock.
    std::span<const HostRecord> records() const { return {recs_.data(), recs_.size()}; }
    const std::vector<TraceHost>& hosts() const { return hosts_; }
    const HostQp& qp(uint32_t i) const { return qps_[i]; }
    std::size_t qp_count() const { return qps_.size(); }
    const HostLayout& layout() const { return layout_; }
    const HostProcess& process(uint32_t p) const { return layout_.processes()[p]; }

    // What a record says (the same values host_trace_json writes).
    uint32_t process_of(const HostRecord& r) const { return r.proc; }
    uint32_t qp_of(const HostRecord& r) const;            // QP, post and poll records
    WorkRequest work_request(const HostRecord& r) const;  // post_send
    Completion completion(const HostRecord& r) const;     // poll_send, poll_recv
    uint64_t recv_wr_id(const HostRecord& r) const;       // post_recv
    // The `ip` of a verb record (the host's address, as its index), or none (null).
    std::optional<uint16_t> ip_of(const HostRecord& r) const {
        const bool early = r.kind == HostRec::create_qp || r.kind == HostRec::open_device;
        if (early && !hosts_[r.host].ip_at_create) return std::nullopt;
        return r.host;
    }
    // Process identity as the records carry it.
    uint32_t pid(uint32_t proc) const { return process(proc).pid; }
    uint32_t tid(const HostRecord& r) const;
    const char* comm(uint32_t proc) const;
    uint64_t cgroup(uint32_t proc) const;
    // Its path, as insert-trace's `cgroup` record names it: one directory per tenant.
    std::string cgroup_path(uint32_t proc) const;
    uint64_t ctx(uint32_t proc) const;
    uint64_t pd(uint32_t proc) const { return ctx(proc) + 0x10000; }
    uint64_t cq(uint32_t proc) const { return ctx(proc) + 0x20000; }
    uint64_t mr_ptr(uint32_t mr) const;
    // Open QPs and MRs a process leaves to process_exit.
    uint32_t open_qps(uint32_t proc) const { return open_qps_[proc]; }
    uint32_t open_mrs(uint32_t proc) const;

    // A hint: `r`'s fields will be read soon (the message and QP a data-path record names
    // are random lines in big tables).
    void prefetch(const HostRecord& r) const;
    // The record's moment in simulation time (its wall clock without the host's offset).
    int64_t true_ns(const HostRecord& r) const;
    uint64_t records_lost() const { return lost_; }
    // QPN reuses whose new QP would have been created before the old one was destroyed
    // (the scenario's gap too short): 0 on every shipped scenario (a test checks).
    uint64_t reuse_overlaps() const { return reuse_overlaps_; }

  private:
    struct Draws;
    void build_hosts(Draws& d);
    void build_conn(Draws& d, uint32_t conn);
    void build_processes(Draws& d);
    void finish_records();
    void add(int64_t sim_ns, HostRec kind, uint16_t host, uint32_t proc, uint32_t ref,
             uint32_t aux = 0, uint8_t flags = 0);
    bool keep_datapath(Draws& d, uint16_t host, uint32_t conn, uint32_t msg_index, TraceVerb verb);

    const Scenario& sc_;
    const Simulator& sim_;
    const HostLayout& layout_;
    std::vector<TraceHost> hosts_;
    std::vector<HostQp> qps_;
    std::vector<uint32_t> open_qps_;
    std::vector<uint32_t> proc_used_;  // QPs made so far per process (their addresses)
    HugeVector<HostRecord> recs_;
    uint64_t lost_ = 0;
    uint64_t reuse_overlaps_ = 0;
};

}  // namespace insert::gen
