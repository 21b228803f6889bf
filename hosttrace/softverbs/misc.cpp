// The rest of libibverbs' public ABI: enum-to-string helpers, rate conversions, fork
// support, sysfs helpers, kernel-struct marshalling used by librdmacm, and the verbs
// softverbs does not offer (they fail with EOPNOTSUPP, as a provider without the
// capability does).
#include <fcntl.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/export.hpp"

SV_EXPORT const char* ibv_node_type_str(ibv_node_type t) {
    switch (t) {
        case IBV_NODE_CA:
            return "InfiniBand channel adapter";
        case IBV_NODE_SWITCH:
            return "InfiniBand switch";
        case IBV_NODE_ROUTER:
            return "InfiniBand router";
        case IBV_NODE_RNIC:
            return "iWARP NIC";
        case IBV_NODE_USNIC:
            return "usNIC";
        case IBV_NODE_USNIC_UDP:
            return "usNIC UDP";
        case IBV_NODE_UNSPECIFIED:
            return "unspecified";
        default:
            return "unknown";
    }
}

SV_EXPORT const char* ibv_port_state_str(ibv_port_state s) {
    static const char* const kNames[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                         "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    return s >= 0 && s <= IBV_PORT_ACTIVE_DEFER ? kNames[s] : "unknown";
}

SV_EXPORT const char* ibv_event_type_str(ibv_event_type e) {
    static const char* const kNames[] = {"CQ error",
                                         "local work queue catastrophic error",
                                         "invalid request local work queue error",
                                         "local access violation work queue error",
                                         "communication established",
                                         "send queue drained",
                                         "path migrated",
                                         "path migration request error",
                                         "local catastrophic error",
                                         "port active",
                                         "port error",
                                         "LID change",
                                         "P_Key change",
                                         "SM change",
                                         "SRQ catastrophic error",
                                         "SRQ limit reached",
                                         "last WQE reached",
                                         "client reregistration",
                                         "GID table change",
                                         "WQ fatal"};
    return e >= 0 && e <= IBV_EVENT_WQ_FATAL ? kNames[e] : "unknown";
}

SV_EXPORT const char* ibv_wc_status_str(ibv_wc_status s) {
    static const char* const kNames[] = {"success",
                                         "local length error",
                                         "local QP operation error",
                                         "local EE context operation error",
                                         "local protection error",
                                         "Work Request Flushed Error",
                                         "memory management operation error",
                                         "bad response error",
                                         "local access error",
                                         "remote invalid request error",
                                         "remote access error",
                                         "remote operation error",
                                         "transport retry counter exceeded",
                                         "RNR retry counter exceeded",
                                         "local RDD violation error",
                                         "remote invalid RD request",
                                         "aborted error",
                                         "invalid EE context number",
                                         "invalid EE context state",
                                         "fatal error",
                                         "response timeout error",
                                         "general error",
                                         "TM error",
                                         "TM rendezvous error"};
    return s >= 0 && s <= IBV_WC_TM_RNDV_INCOMPLETE ? kNames[s] : "unknown";
}

SV_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
    switch (rate) {
        case IBV_RATE_2_5_GBPS:
            return 1;
        case IBV_RATE_5_GBPS:
            return 2;
        case IBV_RATE_10_GBPS:
            return 4;
        case IBV_RATE_20_GBPS:
            return 8;
        case IBV_RATE_30_GBPS:
            return 12;
        case IBV_RATE_40_GBPS:
            return 16;
        case IBV_RATE_60_GBPS:
            return 24;
        case IBV_RATE_80_GBPS:
            return 32;
        case IBV_RATE_120_GBPS:
            return 48;
        default:
            return -1;
    }
}

SV_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
    switch (mult) {
        case 1:
            return IBV_RATE_2_5_GBPS;
        case 2:
            return IBV_RATE_5_GBPS;
        case 4:
            return IBV_RATE_10_GBPS;
        case 8:
            return IBV_RATE_20_GBPS;
        case 12:
            return IBV_RATE_30_GBPS;
        case 16:
            return IBV_RATE_40_GBPS;
        case 24:
            return IBV_RATE_60_GBPS;
        case 32:
            return IBV_RATE_80_GBPS;
        case 48:
            return IBV_RATE_120_GBPS;
        default:
            return IBV_RATE_MAX;
    }
}

namespace {
struct RateMbps {
    ibv_rate rate;
    int mbps;
};
constexpr RateMbps kRates[] = {
    {IBV_RATE_2_5_GBPS, 2500},   {IBV_RATE_5_GBPS, 5000},     {IBV_RATE_10_GBPS, 10000},
    {IBV_RATE_14_GBPS, 14062},   {IBV_RATE_20_GBPS, 20000},   {IBV_RATE_25_GBPS, 25781},
    {IBV_RATE_30_GBPS, 30000},   {IBV_RATE_40_GBPS, 40000},   {IBV_RATE_50_GBPS, 50000},
    {IBV_RATE_56_GBPS, 56250},   {IBV_RATE_60_GBPS, 60000},   {IBV_RATE_80_GBPS, 80000},
    {IBV_RATE_100_GBPS, 100000}, {IBV_RATE_112_GBPS, 112500}, {IBV_RATE_120_GBPS, 120000},
    {IBV_RATE_168_GBPS, 168750}, {IBV_RATE_200_GBPS, 200000}, {IBV_RATE_300_GBPS, 300000},
    {IBV_RATE_400_GBPS, 400000}, {IBV_RATE_600_GBPS, 600000},
};
}  // namespace

SV_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
    for (const RateMbps& r : kRates)
        if (r.rate == rate) return r.mbps;
    return -1;
}

SV_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const RateMbps& r : kRates)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

// Registered memory is ordinary memory here: nothing pins it, so fork needs no care.
SV_EXPORT int ibv_fork_init(void) {
    return 0;
}
SV_EXPORT ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
SV_EXPORT int ibv_dontfork_range(void*, size_t) {
    return 0;
}
SV_EXPORT int ibv_dofork_range(void*, size_t) {
    return 0;
}

SV_EXPORT const char* ibv_get_sysfs_path(void) {
    return "/sys";
}

SV_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    char path[512];
    std::snprintf(path, sizeof(path), "%s/%s", dir, file);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t n = read(fd, buf, size);
    close(fd);
    if (n <= 0) return -1;
    if (static_cast<size_t>(n) < size) buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
    return static_cast<int>(n);
}

SV_EXPORT void ibv_copy_ah_attr_from_kern(ibv_ah_attr* dst, ib_uverbs_ah_attr* src) {
    std::memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
    dst->grh.flow_label = src->grh.flow_label;
    dst->grh.sgid_index = src->grh.sgid_index;
    dst->grh.hop_limit = src->grh.hop_limit;
    dst->grh.traffic_class = src->grh.traffic_class;
    dst->dlid = src->dlid;
    dst->sl = src->sl;
    dst->src_path_bits = src->src_path_bits;
    dst->static_rate = src->static_rate;
    dst->is_global = src->is_global;
    dst->port_num = src->port_num;
}

SV_EXPORT void ibv_copy_qp_attr_from_kern(ibv_qp_attr* dst, ib_uverbs_qp_attr* src) {
    dst->cur_qp_state = static_cast<ibv_qp_state>(src->cur_qp_state);
    dst->path_mtu = static_cast<ibv_mtu>(src->path_mtu);
    dst->path_mig_state = static_cast<ibv_mig_state>(src->path_mig_state);
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = static_cast<int>(src->qp_access_flags);
    dst->cap.max_send_wr = src->max_send_wr;
    dst->cap.max_recv_wr = src->max_recv_wr;
    dst->cap.max_send_sge = src->max_send_sge;
    dst->cap.max_recv_sge = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
    ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

SV_EXPORT void ibv_copy_path_rec_from_kern(ibv_sa_path_rec* dst, ib_user_path_rec* src) {
    std::memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
    std::memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<int>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->reversible = static_cast<int>(src->reversible);
    dst->numb_path = src->numb_path;
    dst->pkey = src->pkey;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->mtu = static_cast<uint8_t>(src->mtu);
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

SV_EXPORT void ibv_copy_path_rec_to_kern(ib_user_path_rec* dst, ibv_sa_path_rec* src) {
    std::memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
    std::memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<uint32_t>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->reversible = static_cast<uint32_t>(src->reversible);
    dst->numb_path = src->numb_path;
    dst->pkey = src->pkey;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->mtu = src->mtu;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

// Enhanced connection establishment: softverbs has no vendor options to negotiate.
SV_EXPORT int ibv_set_ece(ibv_qp*, ibv_ece*) {
    return EOPNOTSUPP;
}
SV_EXPORT int ibv_query_ece(ibv_qp*, ibv_ece*) {
    return EOPNOTSUPP;
}

// Multicast needs a fabric-wide group; UDP sockets here carry unicast only.
SV_EXPORT int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}
SV_EXPORT int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) {
    return EOPNOTSUPP;
}

// The peer's MAC is the kernel's business: softverbs sends through UDP sockets.
SV_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context*, ibv_ah_attr*, uint8_t[6], uint16_t*) {
    return EOPNOTSUPP;
}

// Objects are process-local: there is no uverbs file descriptor to import from.
SV_EXPORT ibv_context* ibv_import_device(int) {
    errno = EOPNOTSUPP;
    return nullptr;
}
SV_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
SV_EXPORT void ibv_unimport_pd(ibv_pd*) {}
SV_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
SV_EXPORT void ibv_unimport_mr(ibv_mr*) {}

// Packets of one message are placed in PSN order, but not promised to the application.
SV_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
    return 0;
}
SV_EXPORT ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
    errno = EOPNOTSUPP;
    return nullptr;
}
SV_EXPORT void ibv_unimport_dm(ibv_dm*) {}
