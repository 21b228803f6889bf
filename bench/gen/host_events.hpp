// What the simulator records per message for the host traces, when asked to
// (Simulator::record_host_events()): the moments the verbs of its two hosts hang on. Only
// then is the table allocated and written; without host traces the simulator pays one
// predictable branch at each of these points.
#pragma once

#include <cstdint>

namespace insert::gen {

constexpr uint64_t kNoTime = UINT64_MAX;

// How the requester's NIC completed a work request (the status its poll_cq reports).
enum class WcStatus : uint8_t { none, success, rem_access_err, wr_flush_err };

struct MsgHostEvents {
    uint64_t post_ns = kNoTime;       // the NIC took the work request (simulation time)
    uint64_t done_ns = kNoTime;       // the requester's NIC completed it (ACK, response, NAK,
                                      // flush; UC: its last packet left the NIC)
    uint64_t delivered_ns = kNoTime;  // the responder accepted its last packet in order
    uint64_t injected_ns = kNoTime;   // an attack's packet reached the victim's NIC
    WcStatus status = WcStatus::none;
};

}  // namespace insert::gen
