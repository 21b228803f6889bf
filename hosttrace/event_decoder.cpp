#include "hosttrace/event_decoder.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "hosttrace/wc_status_names.hpp"

namespace insert::hosttrace {

namespace {

// Insertion-ordered objects: "type" and "verb" lead every line, as a reader expects.
using json = nlohmann::ordered_json;

int64_t clock_ns(clockid_t id) {
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

const char* qp_type_name(uint32_t t) {
    switch (t) {
        case IBV_QPT_RC:
            return "RC";
        case IBV_QPT_UC:
            return "UC";
        case IBV_QPT_UD:
            return "UD";
        case IBV_QPT_RAW_PACKET:
            return "RAW_PACKET";
        case IBV_QPT_XRC_SEND:
            return "XRC_SEND";
        case IBV_QPT_XRC_RECV:
            return "XRC_RECV";
        case IBV_QPT_DRIVER:
            return "DRIVER";
    }
    return "UNKNOWN";
}

const char* qp_state_name(int s) {
    switch (s) {
        case IBV_QPS_RESET:
            return "RESET";
        case IBV_QPS_INIT:
            return "INIT";
        case IBV_QPS_RTR:
            return "RTR";
        case IBV_QPS_RTS:
            return "RTS";
        case IBV_QPS_SQD:
            return "SQD";
        case IBV_QPS_SQE:
            return "SQE";
        case IBV_QPS_ERR:
            return "ERR";
        case IBV_QPS_UNKNOWN:
            return "UNKNOWN";
    }
    return "UNKNOWN";
}

json mtu_bytes(int mtu) {
    if (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) return 128 << mtu;  // IBV_MTU_256 == 1
    return nullptr;
}

const char* wr_opcode_name(uint32_t op) {
    switch (op) {
        case IBV_WR_RDMA_WRITE:
            return "RDMA_WRITE";
        case IBV_WR_RDMA_WRITE_WITH_IMM:
            return "RDMA_WRITE_WITH_IMM";
        case IBV_WR_SEND:
            return "SEND";
        case IBV_WR_SEND_WITH_IMM:
            return "SEND_WITH_IMM";
        case IBV_WR_RDMA_READ:
            return "RDMA_READ";
        case IBV_WR_ATOMIC_CMP_AND_SWP:
            return "ATOMIC_CMP_AND_SWP";
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
            return "ATOMIC_FETCH_AND_ADD";
        case IBV_WR_LOCAL_INV:
            return "LOCAL_INV";
        case IBV_WR_BIND_MW:
            return "BIND_MW";
        case IBV_WR_SEND_WITH_INV:
            return "SEND_WITH_INV";
        case IBV_WR_TSO:
            return "TSO";
        case IBV_WR_DRIVER1:
            return "DRIVER1";
    }
    return "UNKNOWN";
}

const char* wc_opcode_name(uint32_t op) {
    switch (op) {
        case IBV_WC_SEND:
            return "SEND";
        case IBV_WC_RDMA_WRITE:
            return "RDMA_WRITE";
        case IBV_WC_RDMA_READ:
            return "RDMA_READ";
        case IBV_WC_COMP_SWAP:
            return "COMP_SWAP";
        case IBV_WC_FETCH_ADD:
            return "FETCH_ADD";
        case IBV_WC_BIND_MW:
            return "BIND_MW";
        case IBV_WC_LOCAL_INV:
            return "LOCAL_INV";
        case IBV_WC_TSO:
            return "TSO";
        case IBV_WC_RECV:
            return "RECV";
        case IBV_WC_RECV_RDMA_WITH_IMM:
            return "RECV_RDMA_WITH_IMM";
        case IBV_WC_TM_ADD:
        case IBV_WC_TM_DEL:
        case IBV_WC_TM_SYNC:
        case IBV_WC_TM_RECV:
        case IBV_WC_TM_NO_TAG:
        case IBV_WC_DRIVER1:
        case IBV_WC_DRIVER2:
        case IBV_WC_DRIVER3:
            break;
    }
    return "UNKNOWN";
}

// The names of ibv_wc_status in the verbs header's numbering.
static_assert(kWcStatusNames.size() == IBV_WC_TM_RNDV_INCOMPLETE + 1);

json access_names(uint32_t access) {
    static constexpr std::pair<uint32_t, const char*> kFlags[] = {
        {IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
        {IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
        {IBV_ACCESS_REMOTE_READ, "REMOTE_READ"},
        {IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
        {IBV_ACCESS_MW_BIND, "MW_BIND"},
        {IBV_ACCESS_ZERO_BASED, "ZERO_BASED"},
        {IBV_ACCESS_ON_DEMAND, "ON_DEMAND"},
        {IBV_ACCESS_HUGETLB, "HUGETLB"},
        {IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING"}};
    json names = json::array();
    for (const auto& [bit, name] : kFlags)
        if (access & bit) names.push_back(name);
    return names;
}

std::string gid_text(const uint8_t* raw) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, raw, text, sizeof(text));
    return text;
}

json ip_or_null(const std::optional<std::string>& ip) {
    return ip ? json(*ip) : json(nullptr);
}

void decode_modify_qp(const insert_trace_event& e, int previous_state, json& j) {
    ibv_qp_attr attr;
    std::memcpy(&attr, e.u.modify_qp.attr, sizeof(attr));
    const uint32_t mask = e.u.modify_qp.attr_mask;
    j["qpn"] = e.u.modify_qp.qp_num;
    j["attr_mask"] = mask;
    j["from_state"] = qp_state_name(previous_state);
    j["state"] = (mask & IBV_QP_STATE) ? json(qp_state_name(attr.qp_state)) : json(nullptr);
    // Fields appear only when attr_mask says the application set them.
    if (mask & IBV_QP_PATH_MTU) j["path_mtu"] = mtu_bytes(attr.path_mtu);
    if (mask & IBV_QP_DEST_QPN) j["dest_qpn"] = attr.dest_qp_num;
    if (mask & IBV_QP_RQ_PSN) j["rq_psn"] = attr.rq_psn;
    if (mask & IBV_QP_SQ_PSN) j["sq_psn"] = attr.sq_psn;
    if (mask & IBV_QP_PORT) j["port"] = attr.port_num;
    if (mask & IBV_QP_PKEY_INDEX) j["pkey_index"] = attr.pkey_index;
    if (mask & IBV_QP_QKEY) j["qkey"] = attr.qkey;
    if (mask & IBV_QP_ACCESS_FLAGS) j["qp_access"] = access_names(attr.qp_access_flags);
    if (mask & IBV_QP_AV) {
        j["dlid"] = attr.ah_attr.dlid;
        j["is_global"] = attr.ah_attr.is_global != 0;
        if (attr.ah_attr.is_global) {
            Gid dgid;
            std::memcpy(dgid.data(), attr.ah_attr.grh.dgid.raw, dgid.size());
            j["peer_gid"] = gid_text(dgid.data());
            j["peer_ip"] = ip_or_null(gid_to_ip(dgid));
            j["sgid_index"] = attr.ah_attr.grh.sgid_index;
            j["hop_limit"] = attr.ah_attr.grh.hop_limit;
            j["traffic_class"] = attr.ah_attr.grh.traffic_class;
        }
    }
    if (mask & IBV_QP_TIMEOUT) j["timeout"] = attr.timeout;
    if (mask & IBV_QP_RETRY_CNT) j["retry_cnt"] = attr.retry_cnt;
    if (mask & IBV_QP_RNR_RETRY) j["rnr_retry"] = attr.rnr_retry;
    if (mask & IBV_QP_MIN_RNR_TIMER) j["min_rnr_timer"] = attr.min_rnr_timer;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) j["max_rd_atomic"] = attr.max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) j["max_dest_rd_atomic"] = attr.max_dest_rd_atomic;
}

}  // namespace

int64_t wall_clock_offset_ns() {
    return clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

std::string hex_pointer(uint64_t p) {
    return fmt::format("0x{:x}", p);
}

const char* event_name(uint32_t kind) {
    switch (kind) {
        case INSERT_EV_OPEN_DEVICE:
            return "open_device";
        case INSERT_EV_QUERY_GID:
            return "query_gid";
        case INSERT_EV_ALLOC_PD:
            return "alloc_pd";
        case INSERT_EV_CREATE_CQ:
            return "create_cq";
        case INSERT_EV_CREATE_QP:
            return "create_qp";
        case INSERT_EV_MODIFY_QP:
            return "modify_qp";
        case INSERT_EV_DESTROY_QP:
            return "destroy_qp";
        case INSERT_EV_REG_MR:
            return "reg_mr";
        case INSERT_EV_DEREG_MR:
            return "dereg_mr";
        case INSERT_EV_POST_SEND:
            return "post_send";
        case INSERT_EV_POST_RECV:
            return "post_recv";
        case INSERT_EV_POLL_CQ:
            return "poll_cq";
    }
    return "unknown";
}

nlohmann::ordered_json decode_event(const insert_trace_event& e, ProcessTable& table,
                                    int64_t wall_offset_ns) {
    const int previous_state = table.apply(e);
    const pid_t pid = static_cast<pid_t>(e.pid);

    json j;
    j["type"] = "verb";
    j["verb"] = event_name(e.kind);
    j["t_ns"] = e.ts_ns;
    j["wall_ns"] = static_cast<int64_t>(e.ts_ns) + wall_offset_ns;
    j["pid"] = e.pid;
    j["tid"] = e.tid;
    j["comm"] = std::string(e.comm, strnlen(e.comm, sizeof(e.comm)));
    j["cgroup"] = e.cgroup_id;
    const uint64_t qp = (e.kind == INSERT_EV_POST_SEND || e.kind == INSERT_EV_POST_RECV ||
                         e.kind == INSERT_EV_MODIFY_QP || e.kind == INSERT_EV_CREATE_QP ||
                         e.kind == INSERT_EV_DESTROY_QP)
                            ? e.obj
                            : 0;
    j["ip"] = ip_or_null(table.host_ip(pid, e.ctx, qp));
    j["ctx"] = hex_pointer(e.ctx);

    switch (e.kind) {
        case INSERT_EV_OPEN_DEVICE:
            j["device"] = std::string(e.u.open_device.dev_name,
                                      strnlen(e.u.open_device.dev_name, INSERT_DEV_NAME_LEN));
            j["ret"] = e.ret;
            break;
        case INSERT_EV_QUERY_GID: {
            j["port"] = e.u.query_gid.port;
            j["index"] = e.u.query_gid.index;
            j["ret"] = e.ret;
            Gid g;
            std::memcpy(g.data(), e.u.query_gid.gid, g.size());
            j["gid"] = e.ret == 0 ? json(gid_text(g.data())) : json(nullptr);
            j["gid_ip"] = e.ret == 0 ? ip_or_null(gid_to_ip(g)) : json(nullptr);
            break;
        }
        case INSERT_EV_ALLOC_PD:
            j["pd"] = hex_pointer(e.obj);
            j["ret"] = e.ret;
            break;
        case INSERT_EV_CREATE_CQ:
            j["cq"] = hex_pointer(e.obj);
            j["cqe"] = e.u.create_cq.cqe;
            j["ret"] = e.ret;
            break;
        case INSERT_EV_CREATE_QP:
            j["qp"] = hex_pointer(e.obj);
            j["qpn"] = e.obj ? json(e.u.create_qp.qp_num) : json(nullptr);
            j["qp_type"] = e.obj ? json(qp_type_name(e.u.create_qp.qp_type)) : json(nullptr);
            j["pd"] = hex_pointer(e.u.create_qp.pd);
            j["send_cq"] = hex_pointer(e.u.create_qp.send_cq);
            j["recv_cq"] = hex_pointer(e.u.create_qp.recv_cq);
            j["ret"] = e.ret;
            break;
        case INSERT_EV_MODIFY_QP:
            j["qp"] = hex_pointer(e.obj);
            decode_modify_qp(e, previous_state, j);
            j["ret"] = e.ret;
            break;
        case INSERT_EV_DESTROY_QP:
            j["qp"] = hex_pointer(e.obj);
            j["qpn"] = e.u.destroy_qp.qp_num;
            break;
        case INSERT_EV_REG_MR:
        case INSERT_EV_DEREG_MR:
            j["mr"] = hex_pointer(e.obj);
            j["addr"] = e.u.mr.addr;
            j["length"] = e.u.mr.length;
            j["lkey"] = e.u.mr.lkey;
            j["rkey"] = e.u.mr.rkey;
            if (e.kind == INSERT_EV_REG_MR) {
                j["pd"] = hex_pointer(e.u.mr.pd);
                j["iova"] = e.u.mr.iova;
                j["access"] = e.u.mr.access;
                j["access_flags"] = access_names(e.u.mr.access);
                j["ret"] = e.ret;
                if (!e.obj) {
                    j["lkey"] = nullptr;
                    j["rkey"] = nullptr;
                }
            }
            break;
        case INSERT_EV_POST_SEND: {
            const auto& p = e.u.post_send;
            j["qp"] = hex_pointer(e.obj);
            j["qpn"] = p.qp_num;
            j["wr_id"] = p.wr_id;
            j["opcode"] = wr_opcode_name(p.opcode);
            j["send_flags"] = p.send_flags;
            j["signaled"] = (p.send_flags & IBV_SEND_SIGNALED) != 0;
            j["num_sge"] = p.num_sge;
            j["len"] = p.total_len;
            const bool rdma =
                p.opcode == IBV_WR_RDMA_WRITE || p.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                p.opcode == IBV_WR_RDMA_READ || p.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                p.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
            const bool imm =
                p.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || p.opcode == IBV_WR_SEND_WITH_IMM;
            j["remote_addr"] = rdma ? json(p.remote_addr) : json(nullptr);
            j["rkey"] = rdma ? json(p.rkey) : json(nullptr);
            j["imm"] = imm ? json(ntohl(p.imm_data)) : json(nullptr);
            j["chain_index"] = p.chain_index;
            j["truncated"] = p.truncated != 0;
            break;
        }
        case INSERT_EV_POST_RECV: {
            const auto& p = e.u.post_recv;
            j["qp"] = hex_pointer(e.obj);
            j["qpn"] = p.qp_num;
            j["wr_id"] = p.wr_id;
            j["num_sge"] = p.num_sge;
            j["len"] = p.total_len;
            j["chain_index"] = p.chain_index;
            j["truncated"] = p.truncated != 0;
            break;
        }
        case INSERT_EV_POLL_CQ: {
            const auto& p = e.u.poll_cq;
            j["cq"] = hex_pointer(e.obj);
            j["qpn"] = p.qp_num;
            j["wr_id"] = p.wr_id;
            j["status"] = std::string(wc_status_name(p.status));
            j["status_code"] = p.status;
            j["opcode"] = wc_opcode_name(p.opcode);
            j["byte_len"] = p.byte_len;
            j["imm"] = (p.wc_flags & IBV_WC_WITH_IMM) ? json(ntohl(p.imm_data)) : json(nullptr);
            j["src_qp"] = p.src_qp;
            j["wc_flags"] = p.wc_flags;
            j["index"] = p.index;
            j["polled"] = p.polled;
            break;
        }
        default:
            break;
    }
    return j;
}

}  // namespace insert::hosttrace
