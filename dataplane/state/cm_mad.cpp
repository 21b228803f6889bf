#include "dataplane/state/cm_mad.hpp"

#include "dataplane/proto/byte_order.hpp"

namespace insert::state {

std::optional<CmMessage> parse_cm_mad(std::span<const uint8_t> mad) {
    using proto::load_be16, proto::load_be24, proto::load_be32;
    if (mad.size() < kCmReqLocalQpnOffset + 3 || mad[1] != kMgmtClassCm) return std::nullopt;
    const uint8_t* p = mad.data();
    CmMessage m;
    m.local_comm_id = load_be32(p + kMadHeaderLen);
    switch (load_be16(p + 16)) {
        case kCmAttrReq:
            m.kind = CmKind::req;
            m.local_qpn = load_be24(p + kCmReqLocalQpnOffset);
            return m;
        case kCmAttrRep:
            m.kind = CmKind::rep;
            m.remote_comm_id = load_be32(p + kCmRepRemoteCommOffset);
            m.local_qpn = load_be24(p + kCmRepLocalQpnOffset);
            return m;
        default:
            return std::nullopt;
    }
}

}  // namespace insert::state
