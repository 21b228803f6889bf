#include "hosttrace/process_table.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "hosttrace/proc_maps.hpp"

namespace insert::hosttrace {

std::size_t GidIp::format(char* out) const {
    static constexpr uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const bool v4 = std::memcmp(gid.data(), kV4Prefix, sizeof(kV4Prefix)) == 0;
    if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? gid.data() + 12 : gid.data(), out,
                   INET6_ADDRSTRLEN))
        out[0] = '\0';
    return std::strlen(out);
}

std::optional<std::string> gid_to_ip(const Gid& gid) {
    if (std::all_of(gid.begin(), gid.end(), [](uint8_t b) { return b == 0; })) return std::nullopt;
    char text[INET6_ADDRSTRLEN] = {};
    return std::string(text, GidIp{gid}.format(text));
}

namespace {

// GIDs read from sysfs per device: enough for the IPv4 entries RoCE puts after the
// link-local ones.
constexpr int kMaxSysfsGids = 16;

bool parse_gid_text(const std::string& text, Gid& out) {
    // "0000:0000:0000:0000:0000:ffff:0a00:0001": eight groups of four hex digits.
    if (text.size() < 39) return false;
    for (int i = 0; i < 8; i++) {
        const std::string group = text.substr(i * 5, 4);
        char* end = nullptr;
        const unsigned long v = std::strtoul(group.c_str(), &end, 16);
        if (end != group.c_str() + 4) return false;
        out[2 * i] = static_cast<uint8_t>(v >> 8);
        out[2 * i + 1] = static_cast<uint8_t>(v);
    }
    return true;
}

// A real RDMA device publishes its GID table in sysfs, so its IP is known from the
// device open on, before the application queries anything. (softverbs has no sysfs
// entries: there the application's ibv_query_gid is the source.)
void load_sysfs_gids(const std::string& device, ContextState& c) {
    if (device.empty() || device.find('/') != std::string::npos || device.starts_with(".")) return;
    for (int i = 0; i < kMaxSysfsGids; i++) {
        std::ifstream in("/sys/class/infiniband/" + device + "/ports/1/gids/" + std::to_string(i));
        std::string text;
        if (!in || !std::getline(in, text)) break;
        Gid g;
        if (parse_gid_text(text, g)) c.gids.try_emplace(i, g);
    }
}

bool ipv4_mapped(const Gid& g) {
    static constexpr uint8_t kV4Prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(g.data(), kV4Prefix, sizeof(kV4Prefix)) == 0;
}

}  // namespace

int ProcessTable::apply(const insert_trace_event& e) {
    ProcessState& p = procs_[static_cast<pid_t>(e.pid)];
    p.comm.assign(e.comm, strnlen(e.comm, sizeof(e.comm)));
    switch (e.kind) {
        case INSERT_EV_OPEN_DEVICE:
            if (e.obj) {
                ContextState& c = p.contexts[e.obj];
                c.device.assign(e.u.open_device.dev_name,
                                strnlen(e.u.open_device.dev_name, INSERT_DEV_NAME_LEN));
                load_sysfs_gids(c.device, c);
            }
            break;
        case INSERT_EV_QUERY_GID:
            if (e.ret == 0) {
                Gid g;
                std::memcpy(g.data(), e.u.query_gid.gid, g.size());
                p.contexts[e.ctx].gids[e.u.query_gid.index] = g;
            }
            break;
        case INSERT_EV_CREATE_QP:
            if (e.obj) {
                p.qps[e.obj] = QpState{e.ctx, e.u.create_qp.qp_num, IBV_QPS_RESET, -1};
                p.destroyed_qps.erase(e.obj);  // the address is reused
            }
            break;
        case INSERT_EV_MODIFY_QP: {
            QpState& q = p.qps[e.obj];
            q.ctx = e.ctx;
            q.qpn = e.u.modify_qp.qp_num;
            const int previous = q.state;
            if (e.ret == 0) {
                ibv_qp_attr attr;
                std::memcpy(&attr, e.u.modify_qp.attr, sizeof(attr));
                if (e.u.modify_qp.attr_mask & IBV_QP_STATE) q.state = attr.qp_state;
                if ((e.u.modify_qp.attr_mask & IBV_QP_AV) && attr.ah_attr.is_global)
                    q.sgid_index = attr.ah_attr.grh.sgid_index;
            }
            return previous;
        }
        case INSERT_EV_DESTROY_QP:
            if (auto q = p.qps.find(e.obj); q != p.qps.end()) {
                if (p.destroyed_qps.size() >= kMaxDestroyedQps) p.destroyed_qps.clear();
                p.destroyed_qps[e.obj] = q->second;
                p.qps.erase(q);
            }
            break;
        case INSERT_EV_REG_MR:
            if (e.obj) p.mrs[e.obj] = e.u.mr.rkey;
            break;
        case INSERT_EV_DEREG_MR:
            p.mrs.erase(e.obj);
            break;
        default:
            break;
    }
    return 0;
}

std::optional<std::string> ProcessTable::host_ip(pid_t pid, uint64_t ctx, uint64_t qp) const {
    const Gid* gid = host_gid(pid, ctx, qp);
    return gid ? gid_to_ip(*gid) : std::nullopt;
}

const Gid* ProcessTable::host_gid(pid_t pid, uint64_t ctx, uint64_t qp) const {
    auto pit = procs_.find(pid);
    if (pit == procs_.end()) return nullptr;
    const ProcessState& p = pit->second;
    int sgid_index = -1;
    const QpState* q = nullptr;
    if (auto it = p.qps.find(qp); it != p.qps.end())
        q = &it->second;
    else if (auto d = p.destroyed_qps.find(qp); d != p.destroyed_qps.end())
        q = &d->second;
    if (q) {
        sgid_index = q->sgid_index;
        if (!ctx) ctx = q->ctx;
    }
    auto cit = p.contexts.find(ctx);
    if (cit == p.contexts.end()) return nullptr;
    const auto& gids = cit->second.gids;
    const auto nonzero = [](const Gid& g) {
        return std::any_of(g.begin(), g.end(), [](uint8_t b) { return b != 0; });
    };
    if (sgid_index >= 0)
        if (auto g = gids.find(sgid_index); g != gids.end() && nonzero(g->second))
            return &g->second;
    // RoCEv2 over IPv4 is the common case; link-local (RoCE v1) GIDs come first in tables.
    for (const auto& [index, gid] : gids)
        if (ipv4_mapped(gid)) return &gid;  // never zero: the prefix has 0xffff
    for (const auto& [index, gid] : gids)
        if (nonzero(gid)) return &gid;
    return nullptr;
}

bool ProcessTable::claim_context_for_ops(pid_t pid, uint64_t ctx) {
    if (!ctx) return false;
    ContextState& c = procs_[pid].contexts[ctx];
    if (c.ops_resolved) return false;
    c.ops_resolved = true;
    return true;
}

std::vector<pid_t> ProcessTable::exited() const {
    std::vector<pid_t> gone;
    for (const auto& [pid, state] : procs_)
        if (!process_alive(pid)) gone.push_back(pid);
    return gone;
}

std::vector<ExitedProcess> ProcessTable::reap(const std::vector<pid_t>& pids) {
    std::vector<ExitedProcess> gone;
    for (pid_t pid : pids) {
        auto it = procs_.find(pid);
        if (it == procs_.end()) continue;
        gone.push_back({pid, it->second.comm, it->second.qps.size(), it->second.mrs.size()});
        procs_.erase(it);
    }
    return gone;
}

std::vector<ExitedProcess> ProcessTable::reap_exited() {
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
