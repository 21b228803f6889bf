#include "correlator/join/host_model.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "correlator/input/host_names.hpp"
#include "correlator/join/run_sort.hpp"

namespace insert::correlate {

namespace {

// Records of one thread at one instant: the object's creation and set-up before its use,
// its use before its teardown.
int kind_rank(HostKind k) {
    switch (k) {
        case HostKind::create_qp:
            return 0;
        case HostKind::modify_qp:
            return 1;
        case HostKind::reg_mr:
            return 2;
        case HostKind::post_recv:
            return 3;
        case HostKind::post_send:
            return 4;
        case HostKind::poll_cq:
            return 5;
        case HostKind::dereg_mr:
            return 6;
        case HostKind::destroy_qp:
            return 7;
        case HostKind::lost:
            return 8;
        case HostKind::process_exit:
            return 9;
    }
    return 10;
}

uint64_t content_a(const HostEvent& e) {
    switch (e.kind) {
        case HostKind::post_send:
        case HostKind::post_recv:
            return e.u.post.wr_id;
        case HostKind::poll_cq:
            return e.u.poll.wr_id;
        default:
            return e.obj;
    }
}

uint64_t content_b(const HostEvent& e) {
    switch (e.kind) {
        case HostKind::post_send:
        case HostKind::post_recv:
            return e.u.post.len ^ (uint64_t{e.u.post.chain_index} << 48);
        case HostKind::poll_cq:
            return e.u.poll.byte_len | (uint64_t{e.u.poll.status_code} << 32) |
                   (uint64_t(e.u.poll.opcode) << 48);
        default:
            return e.qpn;
    }
}

// docs/correlation.md 2: (wall_ns, tid, record kind, chain_index, wr_id), then the rest of
// the content so that the order is total.
bool canonical_less(const HostEvent& a, const HostEvent& b) {
    const auto chain = [](const HostEvent& e) {
        return (e.kind == HostKind::post_send || e.kind == HostKind::post_recv)
                   ? e.u.post.chain_index
                   : 0u;
    };
    return std::make_tuple(a.wall, a.tid, kind_rank(a.kind), chain(a), content_a(a), content_b(a),
                           a.qpn, a.obj) < std::make_tuple(b.wall, b.tid, kind_rank(b.kind),
                                                           chain(b), content_a(b), content_b(b),
                                                           b.qpn, b.obj);
}

std::optional<Op> family_of(WrOpcode op) {
    switch (op) {
        case WrOpcode::send:
        case WrOpcode::send_with_imm:
        case WrOpcode::send_with_inv:
            return Op::send;
        case WrOpcode::rdma_write:
        case WrOpcode::rdma_write_with_imm:
            return Op::write;
        case WrOpcode::rdma_read:
            return Op::read;
        case WrOpcode::atomic_cmp_and_swp:
            return Op::cmp_swap;
        case WrOpcode::atomic_fetch_and_add:
            return Op::fetch_add;
        case WrOpcode::other:
            break;
    }
    return std::nullopt;
}

// Where a record goes when sorted by (host, pid, canonical order): what nearly always
// decides, in 24 bytes, and the record's index for the rest.
struct EventOrder {
    uint64_t process = 0;  // host id, then pid (signed order)
    int64_t wall = 0;
    int32_t tid = 0;
    uint32_t index = 0;
};

// The records' order by process, canonical order inside. The records stay where they
// are: sorting the 128-byte records (or moving each once into its place afterwards, at
// random) cost more than walking them through their keys; build_process prefetches ahead.
//
// A run's processes are few, and a tracer writes each one's records in time order, in
// stretches between other processes' (the benchmark's run: 32 processes in ~1,000
// stretches). So the keys are dealt to their processes first (a stable counting sort), and
// each process's keys are then sorted as the few ascending runs they are (join/run_sort.hpp;
// a thread's records at one instant can stand in another order than the canonical one).
// Merging all ~1,000 stretches as runs took ten passes over the keys.
HugeVector<EventOrder> order_by_process(const HostEvents& events) {
    const std::size_t n = events.size();
    HugeVector<EventOrder> keys(n);
    tbb::parallel_for(std::size_t{0}, n, [&](std::size_t i) {
        const HostEvent& e = events[i];
        const uint32_t pid_order = static_cast<uint32_t>(e.pid) ^ 0x8000'0000u;
        keys[i] = {(uint64_t{e.host} << 32) | pid_order, e.wall, e.tid, static_cast<uint32_t>(i)};
    });
    // Processes numbered as met; a record nearly always belongs to its predecessor's.
    std::unordered_map<uint64_t, uint32_t> number;
    std::vector<uint64_t> process_of;  // by number
    std::vector<std::size_t> count;
    uint64_t last = 0;
    uint32_t last_number = UINT32_MAX;
    const auto number_of = [&](uint64_t process) {
        if (last_number == UINT32_MAX || process != last) {
            const auto [at, fresh] =
                number.try_emplace(process, static_cast<uint32_t>(process_of.size()));
            if (fresh) {
                process_of.push_back(process);
                count.push_back(0);
            }
            last = process;
            last_number = at->second;
        }
        return last_number;
    };
    for (const EventOrder& k : keys) ++count[number_of(k.process)];
    // Each process's first place: processes in key order.
    std::vector<uint32_t> by_key(process_of.size());
    for (uint32_t i = 0; i < by_key.size(); ++i) by_key[i] = i;
    std::sort(by_key.begin(), by_key.end(),
              [&](uint32_t a, uint32_t b) { return process_of[a] < process_of[b]; });
    std::vector<std::size_t> next(process_of.size());
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    std::size_t place = 0;
    for (const uint32_t p : by_key) {
        next[p] = place;
        ranges.emplace_back(place, place + count[p]);
        place += count[p];
    }
    HugeVector<EventOrder> order(n);
    last_number = UINT32_MAX;
    for (const EventOrder& k : keys) order[next[number_of(k.process)]++] = k;
    const auto less = [&](const EventOrder& a, const EventOrder& b) {
        if (a.wall != b.wall) return a.wall < b.wall;
        if (a.tid != b.tid) return a.tid < b.tid;
        return canonical_less(events[a.index], events[b.index]);
    };
    tbb::parallel_for(std::size_t{0}, ranges.size(), [&](std::size_t r) {
        sort_runs(order.data() + ranges[r].first, order.data() + ranges[r].second, less);
    });
    return order;
}

// Records walked this far ahead are prefetched: the walk reaches them at random.
constexpr std::size_t kEventsAhead = 8;

struct ProcessBuild {
    Process process;
    std::vector<Incarnation> qps;
    uint64_t orphans = 0;
};

// One process's records walked in canonical order into its QP incarnations, memory
// regions, work requests and completions; each record kind has its step. Fills
// needed_until for the records walked (how long the live join must keep each).
class ProcessBuilder {
  public:
    ProcessBuilder(const HostEvent& first, int64_t* needed_until) : needed_until_(needed_until) {
        out_.process.host = first.host;
        out_.process.pid = first.pid;
    }

    void add(uint32_t index, const HostEvent& e) {
        needed_until_[index] = e.wall;
        Process& p = out_.process;
        if (p.comm.len == 0 && e.comm.len) {
            p.comm = e.comm;
            p.cgroup = e.cgroup;
        }
        switch (e.kind) {
            case HostKind::create_qp:
                return create_qp(index, e);
            case HostKind::modify_qp:
                return modify_qp(index, e);
            case HostKind::destroy_qp:
                return destroy_qp(index, e);
            case HostKind::reg_mr:
                return reg_mr(index, e);
            case HostKind::dereg_mr:
                return dereg_mr(index, e);
            case HostKind::post_send:
            case HostKind::post_recv:
                return post(index, e);
            case HostKind::poll_cq:
                return poll(index, e);
            case HostKind::process_exit:
                return process_exit(index, e);
            case HostKind::lost:
                return;
        }
    }

    // Control records are needed until their object ends.
    ProcessBuild finish() {
        for (const auto& [record, qp] : qp_records_) needed_until_[record] = out_.qps[qp].t_end;
        for (const auto& [record, mr] : mr_records_)
            needed_until_[record] = out_.process.mrs[mr].t_dereg;
        for (uint32_t record : exit_records_) needed_until_[record] = out_.process.t_exit;
        return std::move(out_);
    }

  private:
    void create_qp(uint32_t index, const HostEvent& e) {
        if (e.ret != 0 || e.obj == 0) return;
        if (!e.u.create.rc_family) {
            other_type_[e.obj] = true;
            return;
        }
        other_type_.erase(e.obj);
        // A pointer reused without a destroy we saw: the old QP is gone.
        if (auto old = live_by_obj_.find(e.obj); old != live_by_obj_.end())
            end_qp(old->second, e.wall);
        if (auto old = live_by_qpn_.find(e.qpn); old != live_by_qpn_.end())
            end_qp(old->second, e.wall);
        Incarnation q;
        q.host = e.host;
        q.pid = e.pid;
        q.qp_obj = e.obj;
        q.comm = e.comm;
        q.cgroup = e.cgroup;
        q.has_ip = e.has_ip;
        q.ip = e.ip;
        q.qpn = e.qpn;
        q.pd = e.u.create.pd;
        q.uc = e.u.create.uc;
        q.t_create = e.wall;
        out_.qps.push_back(std::move(q));
        live_by_obj_[e.obj] = out_.qps.size() - 1;
        live_by_qpn_[e.qpn] = out_.qps.size() - 1;
        qp_records_.emplace_back(index, out_.qps.size() - 1);
    }

    void modify_qp(uint32_t index, const HostEvent& e) {
        const auto found = live_by_obj_.find(e.obj);
        if (found == live_by_obj_.end() || e.ret != 0) return;
        qp_records_.emplace_back(index, found->second);
        Incarnation& q = out_.qps[found->second];
        fill_ip(q, e);
        const auto& m = e.u.modify;
        if (m.has_access) {
            q.has_access = true;
            q.qp_access = m.access;
        }
        if (m.state == QpState::rtr) {
            if (m.has_peer_ip && m.has_dest_qpn) {
                q.has_peer = true;
                q.peer_ip = m.peer_ip;
                q.dest_qpn = m.dest_qpn;
            }
            if (m.has_rq_psn) {
                q.has_rq_psn = true;
                q.rq_psn = m.rq_psn;
            }
        }
        if (m.state == QpState::rts && m.has_sq_psn) {
            q.has_sq_psn = true;
            q.sq_psn = m.sq_psn;
        }
    }

    void destroy_qp(uint32_t index, const HostEvent& e) {
        const auto found = live_by_obj_.find(e.obj);
        if (found == live_by_obj_.end()) return;
        qp_records_.emplace_back(index, found->second);
        end_qp(found->second, e.wall);
    }

    void reg_mr(uint32_t index, const HostEvent& e) {
        if (e.ret != 0 || e.obj == 0 || e.u.mr.rkey == kNone) return;
        std::vector<MemoryRegion>& mrs = out_.process.mrs;
        MemoryRegion r;
        r.pd = e.u.mr.pd;
        r.addr = e.u.mr.iova != kNone ? static_cast<uint64_t>(e.u.mr.iova) : e.u.mr.addr;
        r.length = e.u.mr.length;
        r.access = e.u.mr.access;
        r.rkey = static_cast<uint32_t>(e.u.mr.rkey);
        r.t_reg = e.wall;
        if (auto old = live_mrs_.find(e.obj); old != live_mrs_.end())
            mrs[old->second].t_dereg = e.wall;
        mrs.push_back(r);
        live_mrs_[e.obj] = mrs.size() - 1;
        mr_records_.emplace_back(index, mrs.size() - 1);
    }

    void dereg_mr(uint32_t index, const HostEvent& e) {
        const auto found = live_mrs_.find(e.obj);
        if (found == live_mrs_.end()) return;
        mr_records_.emplace_back(index, found->second);
        out_.process.mrs[found->second].t_dereg = e.wall;
        live_mrs_.erase(found);
    }

    // A post_send of an RC/UC/XRC family becomes a work request of its QP.
    void post(uint32_t index, const HostEvent& e) {
        const auto found = live_by_obj_.find(e.obj);
        if (found == live_by_obj_.end()) {
            if (!other_type_.count(e.obj)) ++out_.orphans;
            return;
        }
        Incarnation& q = out_.qps[found->second];
        fill_ip(q, e);
        if (e.kind == HostKind::post_recv) return;
        const auto family = family_of(e.u.post.opcode);
        if (!family) return;
        WorkRequest w;
        w.event = index;
        needed_until_[index] = kForever;  // until the live join is done with it
        w.wall = e.wall;
        w.wr_id = e.u.post.wr_id;
        w.len = e.u.post.len;
        w.remote_addr = e.u.post.remote_addr;
        w.rkey = e.u.post.rkey;
        w.tid = e.tid;
        w.chain_index = e.u.post.chain_index;
        w.family = *family;
        w.opcode = e.u.post.opcode;
        w.signaled = e.u.post.signaled;
        q.wrs.push_back(w);
    }

    void poll(uint32_t index, const HostEvent& e) {
        const auto found = live_by_qpn_.find(e.qpn);
        if (found == live_by_qpn_.end()) return;
        Incarnation& q = out_.qps[found->second];
        Completion c;
        c.event = index;
        needed_until_[index] = kForever;
        c.wall = e.wall;
        c.wr_id = e.u.poll.wr_id;
        c.tid = e.tid;
        c.byte_len = e.u.poll.byte_len;
        c.status = e.u.poll.status_code;
        c.opcode = e.u.poll.opcode;
        if (c.opcode == WcOpcode::send_side)
            q.send_completions.push_back(c);
        else if (c.status == 0)
            q.recv_completions.push_back(c);
    }

    // The process ends every QP and memory region it still had.
    void process_exit(uint32_t index, const HostEvent& e) {
        Process& p = out_.process;
        exit_records_.push_back(index);
        p.t_exit = std::min(p.t_exit, e.wall);
        std::vector<std::size_t> live;
        for (const auto& [obj, idx] : live_by_obj_) live.push_back(idx);
        for (std::size_t idx : live) end_qp(idx, e.wall);
        for (const auto& [obj, idx] : live_mrs_) p.mrs[idx].t_dereg = e.wall;
        live_mrs_.clear();
    }

    void end_qp(std::size_t idx, int64_t t) {
        Incarnation& q = out_.qps[idx];
        q.t_end = t;
        live_by_obj_.erase(q.qp_obj);
        const auto it = live_by_qpn_.find(q.qpn);
        if (it != live_by_qpn_.end() && it->second == idx) live_by_qpn_.erase(it);
    }

    static void fill_ip(Incarnation& q, const HostEvent& e) {
        if (!q.has_ip && e.has_ip) {
            q.has_ip = true;
            q.ip = e.ip;
        }
    }

    ProcessBuild out_;
    int64_t* needed_until_;
    // Control records wait for the end of their object: (record, QP) and (record, MR).
    std::vector<std::pair<uint32_t, std::size_t>> qp_records_, mr_records_;
    std::vector<uint32_t> exit_records_;
    std::unordered_map<uint64_t, std::size_t> live_by_obj_;  // qp pointer -> incarnation
    std::unordered_map<uint32_t, std::size_t> live_by_qpn_;
    std::unordered_map<uint64_t, std::size_t> live_mrs_;  // mr pointer -> region
    // QPs of other types (UD, ...) are tracked only to keep their records out of the join.
    std::unordered_map<uint64_t, bool> other_type_;
};

// Walks one process's records ([begin, end) of the canonical order).
ProcessBuild build_process(const HostEvent* base, const EventOrder* begin, const EventOrder* end,
                           int64_t* needed_until) {
    ProcessBuilder builder(base[begin->index], needed_until);
    for (const EventOrder* it = begin; it != end; ++it) {
        if (end - it > static_cast<std::ptrdiff_t>(kEventsAhead))
            __builtin_prefetch(&base[it[kEventsAhead].index]);
        builder.add(it->index, base[it->index]);
    }
    return builder.finish();
}

}  // namespace

HostModel build_host_model(const HostEvents& events, const HostNames& names) {
    HostModel model;
    model.lost_at.resize(names.size());
    model.first_record.assign(names.size(), kForever);
    for (const HostEvent& e : events) {
        if (e.host >= model.first_record.size()) continue;
        model.first_record[e.host] = std::min(model.first_record[e.host], e.wall);
        if (e.kind == HostKind::lost) {
            model.trace_drops += e.u.lost.drops;
            model.lost_at[e.host].push_back(e.wall);
        }
    }
    for (auto& times : model.lost_at) std::sort(times.begin(), times.end());
    const HugeVector<EventOrder> order = order_by_process(events);
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i + 1;
        while (j < order.size() && order[j].process == order[i].process) ++j;
        ranges.emplace_back(i, j);
        i = j;
    }
    std::vector<ProcessBuild> built(ranges.size());
    model.needed_until.assign(events.size(), 0);
    tbb::parallel_for(std::size_t{0}, ranges.size(), [&](std::size_t r) {
        built[r] = build_process(events.data(), order.data() + ranges[r].first,
                                 order.data() + ranges[r].second, model.needed_until.data());
    });
    // Deterministic layout: processes by (host name, pid), QPs by (process, t_create, qp).
    std::vector<std::string> host_names(names.size());
    for (std::size_t i = 0; i < host_names.size(); ++i)
        host_names[i] = names.name(static_cast<uint32_t>(i));
    std::sort(built.begin(), built.end(), [&](const ProcessBuild& a, const ProcessBuild& b) {
        return std::tie(host_names[a.process.host], a.process.pid) <
               std::tie(host_names[b.process.host], b.process.pid);
    });
    for (ProcessBuild& b : built) {
        const uint32_t index = static_cast<uint32_t>(model.processes.size());
        model.orphan_records += b.orphans;
        std::sort(b.qps.begin(), b.qps.end(), [](const Incarnation& x, const Incarnation& y) {
            return std::tie(x.t_create, x.qp_obj) < std::tie(y.t_create, y.qp_obj);
        });
        for (Incarnation& q : b.qps) {
            q.process = index;
            model.qps.push_back(std::move(q));
        }
        model.processes.push_back(std::move(b.process));
    }
    return model;
}

}  // namespace insert::correlate
