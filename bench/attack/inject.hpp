// The packet injector: sends well-formed RoCEv2 request packets (valid ICRC, built with
// dataplane/proto's build_frame) to a victim QP through a raw IPv4 socket, from this host's
// own address (an off-path third host) or with the source address spoofed as the victim's
// real peer. Nothing on the wire tells these packets apart from the peer's own: the victim
// accepts them if the PSN is the one it expects and, for a WRITE, the rkey and address are
// valid (perftest sends both in clear in its TCP exchange). A forged WRITE First that is
// never continued leaves a message that never completes: still an injection (SPEC 10 v1.3).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace insert::attack {

struct InjectOptions {
    std::string dst_ip;
    uint32_t qpn = 0;
    uint32_t psn = 0;
    std::string src_ip;  // empty: the address this host sends from towards dst_ip
    // write (RDMA WRITE Only), send (SEND Only) or write-first (RDMA WRITE First: the start
    // of a message whose Middle and Last never come - it never completes)
    std::string op = "write";
    uint32_t dma_len = 0;  // write-first: the RETH length (0: 4 x len)
    uint32_t rkey = 0;
    uint64_t va = 0;
    uint32_t len = 64;
    unsigned count = 1;  // packets, PSNs psn, psn+1, ...
    uint16_t sport = 4791;
    double gap_ms = 1;  // between packets
};

// Returns the JSON line describing what was sent (with "error" and ok = false on failure).
nlohmann::ordered_json run_inject(const InjectOptions& o, bool& ok);

}  // namespace insert::attack
