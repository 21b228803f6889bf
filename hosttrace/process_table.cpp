#include "hosttrace/process_table.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>

#include "hosttrace/proc_maps.hpp"

namespace insert::hosttrace {

std::optional<std::string> gid_to_ip(const Gid& gid)
{
    if (std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; }))
        return std::nullopt;
    static constexpr uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char text[INET6_ADDRSTRLEN] = {};
    if (std::memcmp(gid.data(), kV4Prefix, sizeof(kV4Prefix)) == 0)
        inet_ntop(AF_INET, gid.data() + 12, text, sizeof(text));
    else
        inet_ntop(AF_INET6, gid.data(), text, sizeof(text));
    return std::string(text);
}

int ProcessTable::apply(const insert_trace_event& e)
{
    ProcessState& p = procs_[static_cast<pid_t>(e.pid)];
    p.comm.assign(e.comm, strnlen(e.comm, sizeof(e.comm)));
    switch (e.kind) {
    case INSERT_EV_OPEN_DEVICE:
        if (e.obj)
            p.contexts[e.obj].device.assign(e.u.open_device.dev_name,
                                            strnlen(e.u.open_device.dev_name, INSERT_DEV_NAME_LEN));
        break;
    case INSERT_EV_QUERY_GID:
        if (e.ret == 0) {
            Gid g;
            std::memcpy(g.data(), e.u.query_gid.gid, g.size());
            p.contexts[e.ctx].gids[e.u.query_gid.index] = g;
        }
        break;
    case INSERT_EV_CREATE_QP:
        if (e.obj)
            p.qps[e.obj] = QpState{e.ctx, e.u.create_qp.qp_num, IBV_QPS_RESET, -1};
        break;
    case INSERT_EV_MODIFY_QP: {
        QpState& q = p.qps[e.obj];
        q.ctx = e.ctx;
        q.qpn = e.u.modify_qp.qp_num;
        const int previous = q.state;
        if (e.ret == 0) {
            ibv_qp_attr attr;
            std::memcpy(&attr, e.u.modify_qp.attr, sizeof(attr));
            if (e.u.modify_qp.attr_mask & IBV_QP_STATE)
                q.state = attr.qp_state;
            if ((e.u.modify_qp.attr_mask & IBV_QP_AV) && attr.ah_attr.is_global)
                q.sgid_index = attr.ah_attr.grh.sgid_index;
        }
        return previous;
    }
    case INSERT_EV_DESTROY_QP:
        p.qps.erase(e.obj);
        break;
    case INSERT_EV_REG_MR:
        if (e.obj)
            p.mrs[e.obj] = e.u.mr.rkey;
        break;
    case INSERT_EV_DEREG_MR:
        p.mrs.erase(e.obj);
        break;
    default:
        break;
    }
    return 0;
}

std::optional<std::string> ProcessTable::host_ip(pid_t pid, uint64_t ctx, uint64_t qp) const
{
    auto pit = procs_.find(pid);
    if (pit == procs_.end())
        return std::nullopt;
    const ProcessState& p = pit->second;
    int sgid_index = -1;
    if (auto q = p.qps.find(qp); q != p.qps.end()) {
        sgid_index = q->second.sgid_index;
        if (!ctx)
            ctx = q->second.ctx;
    }
    auto cit = p.contexts.find(ctx);
    if (cit == p.contexts.end())
        return std::nullopt;
    const auto& gids = cit->second.gids;
    if (sgid_index >= 0)
        if (auto g = gids.find(sgid_index); g != gids.end())
            if (auto ip = gid_to_ip(g->second))
                return ip;
    for (const auto& [index, gid] : gids)
        if (auto ip = gid_to_ip(gid))
            return ip;
    return std::nullopt;
}

bool ProcessTable::claim_context_for_ops(pid_t pid, uint64_t ctx)
{
    if (!ctx)
        return false;
    ContextState& c = procs_[pid].contexts[ctx];
    if (c.ops_resolved)
        return false;
    c.ops_resolved = true;
    return true;
}

std::vector<ExitedProcess> ProcessTable::reap_exited()
{
    std::vector<ExitedProcess> gone;
    for (auto it = procs_.begin(); it != procs_.end();) {
        if (process_alive(it->first)) {
            ++it;
            continue;
        }
        gone.push_back({it->first, it->second.comm, it->second.qps.size(), it->second.mrs.size()});
        it = procs_.erase(it);
    }
    return gone;
}

}  // namespace insert::hosttrace
