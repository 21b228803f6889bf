#include "hosttrace/event_decoder.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <utility>

#include "dataplane/common/json_line.hpp"
#include "hosttrace/json_text.hpp"
#include "hosttrace/wc_status_names.hpp"

namespace insert::hosttrace {

namespace {

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

// An unsigned field, or null when `present` is false.
void u_or_null(JsonLine& j, std::string_view key, bool present, uint64_t v) {
    if (present)
        j.u(key, v);
    else
        j.null(key);
}

// The MTU in bytes (IBV_MTU_256 == 1), or null for a value out of the enum (`& 7`: the
// shift stays defined).
void mtu_bytes(JsonLine& j, std::string_view key, int mtu) {
    u_or_null(j, key, mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096, 128u << (mtu & 7));
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

void access_names(JsonLine& j, std::string_view key, uint32_t access) {
    static constexpr std::pair<uint32_t, std::string_view> kFlags[] = {
        {IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE"},
        {IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE"},
        {IBV_ACCESS_REMOTE_READ, "REMOTE_READ"},
        {IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC"},
        {IBV_ACCESS_MW_BIND, "MW_BIND"},
        {IBV_ACCESS_ZERO_BASED, "ZERO_BASED"},
        {IBV_ACCESS_ON_DEMAND, "ON_DEMAND"},
        {IBV_ACCESS_HUGETLB, "HUGETLB"},
        {IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING"}};
    j.array(key);
    for (const auto& [bit, name] : kFlags)
        if (access & bit) j.item_s(name);
    j.end_array();
}

// A GID as IPv6 text (inet_ntop), for JsonLine::ip.
struct GidText {
    const uint8_t* raw;
    std::size_t format(char* out) const {
        if (!inet_ntop(AF_INET6, raw, out, INET6_ADDRSTRLEN)) out[0] = '\0';
        return std::strlen(out);
    }
};

// The GID's address (gid_to_ip), or null for the zero GID.
void gid_ip(JsonLine& j, std::string_view key, const Gid* gid) {
    if (gid && std::any_of(gid->begin(), gid->end(), [](uint8_t b) { return b != 0; }))
        j.ip(key, GidIp{*gid});
    else
        j.null(key);
}

void decode_modify_qp(const insert_trace_event& e, int previous_state, JsonLine& j) {
    ibv_qp_attr attr;
    std::memcpy(&attr, e.u.modify_qp.attr, sizeof(attr));
    const uint32_t mask = e.u.modify_qp.attr_mask;
    j.u("qpn", e.u.modify_qp.qp_num);
    j.u("attr_mask", mask);
    j.word("from_state", qp_state_name(previous_state));
    if (mask & IBV_QP_STATE)
        j.word("state", qp_state_name(attr.qp_state));
    else
        j.null("state");
    // Fields appear only when attr_mask says the application set them.
    if (mask & IBV_QP_PATH_MTU) mtu_bytes(j, "path_mtu", attr.path_mtu);
    if (mask & IBV_QP_DEST_QPN) j.u("dest_qpn", attr.dest_qp_num);
    if (mask & IBV_QP_RQ_PSN) j.u("rq_psn", attr.rq_psn);
    if (mask & IBV_QP_SQ_PSN) j.u("sq_psn", attr.sq_psn);
    if (mask & IBV_QP_PORT) j.u("port", attr.port_num);
    if (mask & IBV_QP_PKEY_INDEX) j.u("pkey_index", attr.pkey_index);
    if (mask & IBV_QP_QKEY) j.u("qkey", attr.qkey);
    if (mask & IBV_QP_ACCESS_FLAGS) access_names(j, "qp_access", attr.qp_access_flags);
    if (mask & IBV_QP_AV) {
        j.u("dlid", attr.ah_attr.dlid);
        j.b("is_global", attr.ah_attr.is_global != 0);
        if (attr.ah_attr.is_global) {
            Gid dgid;
            std::memcpy(dgid.data(), attr.ah_attr.grh.dgid.raw, dgid.size());
            j.ip("peer_gid", GidText{dgid.data()});
            gid_ip(j, "peer_ip", &dgid);
            j.u("sgid_index", attr.ah_attr.grh.sgid_index);
            j.u("hop_limit", attr.ah_attr.grh.hop_limit);
            j.u("traffic_class", attr.ah_attr.grh.traffic_class);
        }
    }
    if (mask & IBV_QP_TIMEOUT) j.u("timeout", attr.timeout);
    if (mask & IBV_QP_RETRY_CNT) j.u("retry_cnt", attr.retry_cnt);
    if (mask & IBV_QP_RNR_RETRY) j.u("rnr_retry", attr.rnr_retry);
    if (mask & IBV_QP_MIN_RNR_TIMER) j.u("min_rnr_timer", attr.min_rnr_timer);
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC) j.u("max_rd_atomic", attr.max_rd_atomic);
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) j.u("max_dest_rd_atomic", attr.max_dest_rd_atomic);
}

}  // namespace

int64_t wall_clock_offset_ns() {
    return clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
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

void decode_event(const insert_trace_event& e, ProcessTable& table, int64_t wall_offset_ns,
                  std::string_view host, std::string& out) {
    const int previous_state = table.apply(e);
    const pid_t pid = static_cast<pid_t>(e.pid);

    // "type" and "verb" lead every line, as a reader expects.
    JsonLine j(out);
    j.word("type", "verb");
    j.word("verb", event_name(e.kind));
    j.u("t_ns", e.ts_ns);
    j.i("wall_ns", static_cast<int64_t>(e.ts_ns) + wall_offset_ns);
    j.u("pid", e.pid);
    j.u("tid", e.tid);
    text(j, "comm", std::string_view(e.comm, strnlen(e.comm, sizeof(e.comm))));
    j.u("cgroup", e.cgroup_id);
    const uint64_t qp = (e.kind == INSERT_EV_POST_SEND || e.kind == INSERT_EV_POST_RECV ||
                         e.kind == INSERT_EV_MODIFY_QP || e.kind == INSERT_EV_CREATE_QP ||
                         e.kind == INSERT_EV_DESTROY_QP)
                            ? e.obj
                            : 0;
    gid_ip(j, "ip", table.host_gid(pid, e.ctx, qp));
    j.ip("ctx", HexPointer{e.ctx});

    switch (e.kind) {
        case INSERT_EV_OPEN_DEVICE:
            text(j, "device",
                 std::string_view(e.u.open_device.dev_name,
                                  strnlen(e.u.open_device.dev_name, INSERT_DEV_NAME_LEN)));
            j.i("ret", e.ret);
            break;
        case INSERT_EV_QUERY_GID: {
            j.u("port", e.u.query_gid.port);
            j.i("index", e.u.query_gid.index);
            j.i("ret", e.ret);
            Gid g;
            std::memcpy(g.data(), e.u.query_gid.gid, g.size());
            if (e.ret == 0)
                j.ip("gid", GidText{g.data()});
            else
                j.null("gid");
            gid_ip(j, "gid_ip", e.ret == 0 ? &g : nullptr);
            break;
        }
        case INSERT_EV_ALLOC_PD:
            j.ip("pd", HexPointer{e.obj});
            j.i("ret", e.ret);
            break;
        case INSERT_EV_CREATE_CQ:
            j.ip("cq", HexPointer{e.obj});
            j.i("cqe", e.u.create_cq.cqe);
            j.i("ret", e.ret);
            break;
        case INSERT_EV_CREATE_QP:
            j.ip("qp", HexPointer{e.obj});
            u_or_null(j, "qpn", e.obj != 0, e.u.create_qp.qp_num);
            if (e.obj)
                j.word("qp_type", qp_type_name(e.u.create_qp.qp_type));
            else
                j.null("qp_type");
            j.ip("pd", HexPointer{e.u.create_qp.pd});
            j.ip("send_cq", HexPointer{e.u.create_qp.send_cq});
            j.ip("recv_cq", HexPointer{e.u.create_qp.recv_cq});
            j.i("ret", e.ret);
            break;
        case INSERT_EV_MODIFY_QP:
            j.ip("qp", HexPointer{e.obj});
            decode_modify_qp(e, previous_state, j);
            j.i("ret", e.ret);
            break;
        case INSERT_EV_DESTROY_QP:
            j.ip("qp", HexPointer{e.obj});
            j.u("qpn", e.u.destroy_qp.qp_num);
            break;
        case INSERT_EV_REG_MR:
        case INSERT_EV_DEREG_MR: {
            // A failed registration (no MR) has no keys.
            const bool keys = e.kind == INSERT_EV_DEREG_MR || e.obj;
            j.ip("mr", HexPointer{e.obj});
            j.u("addr", e.u.mr.addr);
            j.u("length", e.u.mr.length);
            u_or_null(j, "lkey", keys, e.u.mr.lkey);
            u_or_null(j, "rkey", keys, e.u.mr.rkey);
            if (e.kind == INSERT_EV_REG_MR) {
                j.ip("pd", HexPointer{e.u.mr.pd});
                j.u("iova", e.u.mr.iova);
                j.u("access", e.u.mr.access);
                access_names(j, "access_flags", e.u.mr.access);
                j.i("ret", e.ret);
            }
            break;
        }
        case INSERT_EV_POST_SEND: {
            const auto& p = e.u.post_send;
            j.ip("qp", HexPointer{e.obj});
            j.u("qpn", p.qp_num);
            j.u("wr_id", p.wr_id);
            j.word("opcode", wr_opcode_name(p.opcode));
            j.u("send_flags", p.send_flags);
            j.b("signaled", (p.send_flags & IBV_SEND_SIGNALED) != 0);
            j.u("num_sge", p.num_sge);
            j.u("len", p.total_len);
            const bool rdma =
                p.opcode == IBV_WR_RDMA_WRITE || p.opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
                p.opcode == IBV_WR_RDMA_READ || p.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
                p.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
            const bool imm =
                p.opcode == IBV_WR_RDMA_WRITE_WITH_IMM || p.opcode == IBV_WR_SEND_WITH_IMM;
            u_or_null(j, "remote_addr", rdma, p.remote_addr);
            u_or_null(j, "rkey", rdma, p.rkey);
            u_or_null(j, "imm", imm, ntohl(p.imm_data));
            j.u("chain_index", p.chain_index);
            j.b("truncated", p.truncated != 0);
            break;
        }
        case INSERT_EV_POST_RECV: {
            const auto& p = e.u.post_recv;
            j.ip("qp", HexPointer{e.obj});
            j.u("qpn", p.qp_num);
            j.u("wr_id", p.wr_id);
            j.u("num_sge", p.num_sge);
            j.u("len", p.total_len);
            j.u("chain_index", p.chain_index);
            j.b("truncated", p.truncated != 0);
            break;
        }
        case INSERT_EV_POLL_CQ: {
            const auto& p = e.u.poll_cq;
            j.ip("cq", HexPointer{e.obj});
            j.u("qpn", p.qp_num);
            j.u("wr_id", p.wr_id);
            j.word("status", wc_status_name(p.status));
            j.u("status_code", p.status);
            j.word("opcode", wc_opcode_name(p.opcode));
            j.u("byte_len", p.byte_len);
            u_or_null(j, "imm", p.wc_flags & IBV_WC_WITH_IMM, ntohl(p.imm_data));
            j.u("src_qp", p.src_qp);
            j.u("wc_flags", p.wc_flags);
            j.u("index", p.index);
            j.u("polled", p.polled);
            break;
        }
        default:
            break;
    }
    text(j, "host", host);
    j.end();
}

}  // namespace insert::hosttrace
