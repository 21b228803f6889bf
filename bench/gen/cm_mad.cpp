#include "bench/gen/cm_mad.hpp"

#include <cstring>

#include "dataplane/proto/byte_order.hpp"

namespace insert::gen {

namespace {

using proto::store_be16;
using proto::store_be24;
using proto::store_be32;
using proto::store_be64;

constexpr uint8_t kBaseVersion = 1, kClassVersion = 2, kMethodSend = 0x03;
// RDMA CM's service ID for TCP port space (0x0000000001 06 xxxx), port 4791 is arbitrary.
constexpr uint64_t kServiceId = 0x00000000010612B7ull;
constexpr uint8_t kResponderResources = 16, kInitiatorDepth = 16;

uint8_t mtu_code(uint32_t mtu) {  // IBTA: 1=256 ... 5=4096
    uint8_t code = 1;
    while (code < 5 && (256u << (code - 1)) < mtu) ++code;
    return code;
}

}  // namespace

void write_cm_mad(const CmMadFields& f, std::array<uint8_t, kMadBytes>& mad) {
    mad.fill(0);
    uint8_t* m = mad.data();
    m[0] = kBaseVersion;
    m[1] = kCmMgmtClass;
    m[2] = kClassVersion;
    m[3] = kMethodSend;
    store_be64(m + 8, (uint64_t{f.local_comm_id} << 32) | static_cast<uint8_t>(f.kind));  // TID
    const uint16_t attr = f.kind == CmKind::req   ? kCmAttrReq
                          : f.kind == CmKind::rep ? kCmAttrRep
                                                  : kCmAttrRtu;
    store_be16(m + 16, attr);
    uint8_t* d = m + 24;  // the CM message data
    switch (f.kind) {
        case CmKind::req:
            store_be32(d + 0, f.local_comm_id);
            store_be64(d + 8, kServiceId);
            store_be64(d + 16, 0x0002C90300000000ull | f.local_comm_id);  // Local CA GUID
            store_be24(d + 32, f.local_qpn);
            d[35] = kResponderResources;
            d[39] = kInitiatorDepth;
            d[43] = static_cast<uint8_t>(
                20 << 3);  // remote CM response timeout; RC; no EE flow control
            store_be24(d + 44, f.starting_psn);
            d[47] = static_cast<uint8_t>((20 << 3) | 7);  // local CM response timeout, retry count
            store_be16(d + 48, 0xFFFF);                   // P_Key
            d[50] = static_cast<uint8_t>((mtu_code(f.path_mtu) << 4) | 7);  // path MTU, RNR retry
            d[51] = static_cast<uint8_t>(15 << 4);                          // max CM retries
            store_be16(d + 52, 0xFFFF);                                     // RoCE: permissive LIDs
            store_be16(d + 54, 0xFFFF);
            std::memcpy(d + 56, f.local_ip.bytes.data(), 16);  // GIDs: IPv4-mapped or IPv6
            std::memcpy(d + 72, f.remote_ip.bytes.data(), 16);
            d[93] = 64;                             // hop limit
            d[95] = static_cast<uint8_t>(18 << 3);  // local ACK timeout
            break;
        case CmKind::rep:
            store_be32(d + 0, f.local_comm_id);
            store_be32(d + 4, f.remote_comm_id);
            store_be24(d + 12, f.local_qpn);
            store_be24(d + 20, f.starting_psn);
            d[24] = kResponderResources;
            d[25] = kInitiatorDepth;
            d[26] = static_cast<uint8_t>(15 << 3);  // target ACK delay
            d[27] = static_cast<uint8_t>(7 << 5);   // RNR retry count
            store_be64(d + 28, 0x0002C90300000000ull | f.local_comm_id);
            break;
        case CmKind::rtu:
            store_be32(d + 0, f.local_comm_id);
            store_be32(d + 4, f.remote_comm_id);
            break;
        case CmKind::none:
            break;
    }
}

}  // namespace insert::gen
