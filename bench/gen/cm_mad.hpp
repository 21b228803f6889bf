// InfiniBand Communication Management MADs (IBTA vol.1 12.6) carried by RoCEv2 on QP 1.
// Only the fields an observer pairs on are meaningful beyond plausibility: Local/Remote
// Communication ID, Local QPN and Starting PSN at the IBTA offsets that docs/semantics.md
// lists (REQ: Local Comm ID @24, Local QPN @56, Starting PSN @68; REP: Remote Comm ID @28,
// Local QPN @36, Starting PSN @44).
#pragma once

#include <array>
#include <cstdint>

#include "bench/gen/sim_packet.hpp"
#include "dataplane/proto/ip_address.hpp"

namespace insert::gen {

constexpr std::size_t kMadBytes = 256;
constexpr uint8_t kCmMgmtClass = 0x07;
constexpr uint16_t kCmAttrReq = 0x0010, kCmAttrRep = 0x0013, kCmAttrRtu = 0x0014;

struct CmMadFields {
    CmKind kind = CmKind::req;
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t local_qpn = 0;
    uint32_t starting_psn = 0;
    uint32_t path_mtu = 1024;
    proto::IpAddress local_ip, remote_ip;  // the REQ's primary path GIDs
};

void write_cm_mad(const CmMadFields& f, std::array<uint8_t, kMadBytes>& mad);

}  // namespace insert::gen
