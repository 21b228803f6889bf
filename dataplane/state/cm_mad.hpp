// The few fields of InfiniBand CM MADs (IBTA vol.1 ch.12) that pairing needs: a CM REQ's
// Local Communication ID and Local QPN, and a CM REP's Remote Communication ID and Local
// QPN. MADs travel as UD SEND Only to QP 1.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace insert::state {

enum class CmKind : uint8_t { req, rep };

struct CmMessage {
    CmKind kind = CmKind::req;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;  // REP only
    uint32_t local_qpn = 0;
};

constexpr uint8_t kMgmtClassCm = 0x07;
constexpr uint16_t kCmAttrReq = 0x0010;
constexpr uint16_t kCmAttrRep = 0x0013;
constexpr std::size_t kMadHeaderLen = 24;
constexpr std::size_t kCmReqLocalQpnOffset = 56;  // MAD offset, 24 bits
constexpr std::size_t kCmRepRemoteCommOffset = 28;
constexpr std::size_t kCmRepLocalQpnOffset = 36;  // MAD offset, 24 bits

// nullopt for anything that is not a well-formed CM REQ or REP.
std::optional<CmMessage> parse_cm_mad(std::span<const uint8_t> mad);

}  // namespace insert::state
