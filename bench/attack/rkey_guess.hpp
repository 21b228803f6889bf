// The rkey-guessing attacker: connects to an unmodified perftest server as its client
// (perftest's own TCP exchange), so the server's QP is connected to ours and the server
// told us its QPN, PSN, buffer address and rkey. It then writes to that address with other
// rkeys (advertised + k * step, k = 1..count), as someone probing for other memory regions
// of the victim process would.
//
// Each guess is one RDMA WRITE (one packet, a fresh PSN). A wrong rkey is answered with a
// NAK "remote access error", which moves our QP to Error (IBTA) and leaves the responder's
// expected PSN where it was. So after each rejected guess the QP is reset and reconnected
// at the same PSN, and one WRITE with the advertised rkey takes that PSN (the responder
// accepts it and moves on); the next guess gets the next PSN. On the wire each guess is a
// message of its own; the legitimate WRITE reuses its PSN, so an observer counts it as a
// retransmission, not as a message.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace insert::attack {

struct RkeyGuessOptions {
    std::string server_ip;
    uint16_t port = 18515;
    std::string local_ip;  // empty: the first verbs device
    unsigned count = 8;
    uint32_t step = 1;
    uint32_t len = 64;
    std::string perftest_version = "6.06";
    double connect_timeout_s = 20;
    double hold_s = 0;  // keep the connection this long after the guesses
};

// Runs the attack; returns the JSON line describing it (with "error" when it failed, in
// which case `ok` is false).
nlohmann::ordered_json run_rkey_guess(const RkeyGuessOptions& o, bool& ok);

}  // namespace insert::attack
