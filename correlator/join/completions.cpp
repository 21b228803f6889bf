#include "correlator/join/completions.hpp"

#include <unordered_map>

#include "correlator/join/align.hpp"

namespace insert::correlate {

namespace {
constexpr uint16_t kWcSuccess = 0;  // IBV_WC_SUCCESS
}  // namespace

void complete_work_requests(Incarnation& q) {
    // Completions of each wr_id in canonical order, consumed front to back: work requests
    // are visited in post order, so a completion older than one post is older than every
    // later post too and can be passed over for good.
    struct Queue {
        std::vector<uint32_t> items;
        std::size_t next = 0;
    };
    std::unordered_map<uint64_t, Queue> by_wr_id;
    for (uint32_t i = 0; i < q.send_completions.size(); ++i)
        by_wr_id[q.send_completions[i].wr_id].items.push_back(i);
    for (WorkRequest& w : q.wrs) {
        w.t_poll = kNone;
        w.t_covered = kNone;
        w.wc_status = 0;
        w.completion_event = -1;
        const auto it = by_wr_id.find(w.wr_id);
        if (it == by_wr_id.end()) continue;
        Queue& queue = it->second;
        while (queue.next < queue.items.size() &&
               q.send_completions[queue.items[queue.next]].wall < w.wall)
            ++queue.next;
        if (queue.next == queue.items.size()) continue;
        const Completion& c = q.send_completions[queue.items[queue.next]];
        // An unsignaled request has a completion of its own only when it failed (IBTA: an
        // error completion is always generated); a successful one after its post belongs
        // to a signaled request.
        if (!w.signaled && c.status == kWcSuccess) continue;
        ++queue.next;
        w.t_poll = c.wall;
        w.wc_status = c.status;
        w.completion_event = c.event;
    }
    // Unsignaled without one: covered by the next signaled request's completion.
    int64_t next_poll = kNone;
    for (auto it = q.wrs.rbegin(); it != q.wrs.rend(); ++it) {
        if (it->signaled)
            next_poll = it->t_poll != kNone ? it->t_poll : next_poll;
        else if (it->t_poll == kNone)
            it->t_covered = next_poll;
    }
}

std::vector<int64_t> match_receive_completions(const Incarnation& q,
                                               const std::vector<const WireMsg*>& sends) {
    std::vector<int64_t> out(sends.size(), -1);
    const auto& recvs = q.recv_completions;
    const auto agree = [&](std::size_t i, std::size_t j) {
        const WireMsg& m = *sends[i];
        const Completion& c = recvs[j];
        if (m.op == Op::send) return c.opcode == WcOpcode::recv && c.byte_len == m.bytes;
        return c.opcode == WcOpcode::recv_rdma_with_imm;
    };
    const Alignment a = align(sends.size(), recvs.size(), agree);
    for (const AlignedPair& p : a.pairs) out[p.a] = p.b;
    return out;
}

}  // namespace insert::correlate
