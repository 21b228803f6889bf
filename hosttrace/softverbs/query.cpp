// Device, port and GID attributes of a softverbs device.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/export.hpp"
#include "hosttrace/softverbs/ops.hpp"

#undef ibv_query_port

namespace insert::softverbs {

namespace {

constexpr uint8_t kPortNum = 1;
// IP + UDP + BTH + the longest extension headers + ICRC around one MTU of payload.
constexpr int kRoceOverhead = 20 + 8 + 12 + 28 + 4;

void gid_of(const Device& d, ibv_gid& gid) {
    std::memset(&gid, 0, sizeof(gid));
    gid.raw[10] = 0xFF;
    gid.raw[11] = 0xFF;
    gid.raw[12] = static_cast<uint8_t>(d.ipv4 >> 24);
    gid.raw[13] = static_cast<uint8_t>(d.ipv4 >> 16);
    gid.raw[14] = static_cast<uint8_t>(d.ipv4 >> 8);
    gid.raw[15] = static_cast<uint8_t>(d.ipv4);
}

void fill_port(const Device& d, ibv_port_attr& a) {
    std::memset(&a, 0, sizeof(a));
    a.state = IBV_PORT_ACTIVE;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = active_mtu(d);
    a.gid_tbl_len = 1;
    a.port_cap_flags = IBV_PORT_CM_SUP;
    a.max_msg_sz = 1u << 31;
    a.pkey_tbl_len = 1;
    a.max_vl_num = 1;
    a.active_width = 2;   // 4X
    a.active_speed = 32;  // EDR-class figure; the real rate is whatever the CPU sustains
    a.phys_state = 5;     // LinkUp
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
}

}  // namespace

uint64_t node_guid(const Device& d) {
    // EUI-64 style from the IPv4 address, stable across runs.
    return (uint64_t{0x02} << 56) | (uint64_t{0x5356} << 32) | d.ipv4;
}

ibv_mtu active_mtu(const Device& d) {
    const int room = d.if_mtu - kRoceOverhead;
    if (room >= 4096) return IBV_MTU_4096;
    if (room >= 2048) return IBV_MTU_2048;
    if (room >= 1024) return IBV_MTU_1024;
    if (room >= 512) return IBV_MTU_512;
    return IBV_MTU_256;
}

int sv_query_device(ibv_context* context, ibv_device_attr* a) {
    const Device& d = *to_ctx(context)->device;
    std::memset(a, 0, sizeof(*a));
    std::snprintf(a->fw_ver, sizeof(a->fw_ver), "softverbs-1.0");
    a->node_guid = htobe64(node_guid(d));
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = kMaxMrSize;
    a->page_size_cap = 4096;
    a->vendor_id = 0;
    a->vendor_part_id = 0;
    a->hw_ver = 1;
    a->max_qp = kMaxQps;
    a->max_qp_wr = kMaxQpWr;
    a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |
                          IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID;
    a->max_sge = kMaxSendSge;
    a->max_sge_rd = kMaxSendSge;
    a->max_cq = 1024;
    a->max_cqe = kMaxCqe;
    a->max_mr = kMaxMrs - 1;
    a->max_pd = 1024;
    a->max_qp_rd_atom = kMaxRdAtomic;
    a->max_ee_rd_atom = 0;
    a->max_res_rd_atom = kMaxRdAtomic * kMaxQps;
    a->max_qp_init_rd_atom = kMaxRdAtomic;
    a->atomic_cap = IBV_ATOMIC_HCA;
    a->max_srq = 1024;
    a->max_srq_wr = kMaxQpWr;
    a->max_srq_sge = kMaxRecvSge;
    a->max_pkeys = 1;
    a->phys_port_cnt = 1;
    return 0;
}

int sv_query_device_ex(ibv_context* context, const ibv_query_device_ex_input*,
                       ibv_device_attr_ex* attr, size_t len) {
    ibv_device_attr_ex full{};
    sv_query_device(context, &full.orig_attr);
    full.max_dm_size = 0;
    std::memcpy(attr, &full, std::min(len, sizeof(full)));
    return 0;
}

int sv_query_port(ibv_context* context, uint8_t port, ibv_port_attr* attr, size_t len) {
    if (port != kPortNum) return EINVAL;
    ibv_port_attr full;
    fill_port(*to_ctx(context)->device, full);
    std::memcpy(attr, &full, std::min(len, sizeof(full)));
    return 0;
}

}  // namespace insert::softverbs

using namespace insert::softverbs;

SV_EXPORT int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
    return sv_query_device(context, attr);
}

// The pre-extension entry point: callers built against old headers pass the shorter
// struct that ends at link_layer.
SV_EXPORT int ibv_query_port(ibv_context* context, uint8_t port,
                             struct _compat_ibv_port_attr* attr) {
    return sv_query_port(context, port, reinterpret_cast<ibv_port_attr*>(attr),
                         offsetof(ibv_port_attr, flags));
}

SV_EXPORT int ibv_query_gid(ibv_context* context, uint8_t port, int index, ibv_gid* gid) {
    if (port != kPortNum || index != 0) return -1;
    gid_of(*to_ctx(context)->device, *gid);
    return 0;
}

SV_EXPORT int _ibv_query_gid_ex(ibv_context* context, uint32_t port, uint32_t index,
                                ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (flags) return EINVAL;
    if (port != kPortNum || index != 0) return ENODATA;
    ibv_gid_entry e{};
    const Device& d = *to_ctx(context)->device;
    gid_of(d, e.gid);
    e.gid_index = 0;
    e.port_num = kPortNum;
    e.gid_type = IBV_GID_TYPE_ROCE_V2;
    e.ndev_ifindex = static_cast<uint32_t>(d.ifindex);
    std::memcpy(entry, &e, std::min(entry_size, sizeof(e)));
    return 0;
}

SV_EXPORT ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries,
                                       size_t max_entries, uint32_t flags, size_t entry_size) {
    if (flags) return -EINVAL;
    if (max_entries < 1) return -EINVAL;
    const int rc = _ibv_query_gid_ex(context, kPortNum, 0, entries, 0, entry_size);
    return rc ? -rc : 1;
}

SV_EXPORT int ibv_query_pkey(ibv_context*, uint8_t port, int index, __be16* pkey) {
    if (port != kPortNum || index != 0) return -1;
    *pkey = htobe16(0xFFFF);
    return 0;
}

SV_EXPORT int ibv_get_pkey_index(ibv_context*, uint8_t port, __be16 pkey) {
    if (port != kPortNum) return -EINVAL;
    return be16toh(pkey) == 0xFFFF ? 0 : -ENOENT;
}
