// The RC/UD transport state machines. All functions run on the engine thread with the
// context lock held.
#pragma once

#include <cstdint>

#include "dataplane/proto/parser.hpp"
#include "hosttrace/softverbs/objects.hpp"

namespace insert::softverbs {

class Engine;

// A received, parsed, ICRC-checked packet addressed to a QP.
struct Inbound {
    const proto::ParsedPacket& p;
    const uint8_t* payload;
    uint32_t payload_len;
    uint32_t src_ipv4;
};

// Requester (requester.cpp): sends new and retransmitted requests, consumes ACK/NAK/READ
// responses/ATOMIC ACKs, runs the retransmission timer.
bool requester_transmit(Engine& e, Qp& qp);
void requester_receive(Engine& e, Qp& qp, const Inbound& in);
void requester_timers(Engine& e, Qp& qp);

// Responder (responder.cpp): executes SEND/WRITE/READ/atomics with rkey checks, answers
// with coalesced ACKs, NAKs and READ responses.
void responder_receive(Engine& e, Qp& qp, const Inbound& in);
bool responder_transmit(Engine& e, Qp& qp);

// UD and UC receive (responder.cpp).
void ud_receive(Engine& e, Qp& qp, const Inbound& in);
void uc_receive(Engine& e, Qp& qp, const Inbound& in);

// Completions (completion.cpp).
void push_completion(Cq& cq, const ibv_wc& wc);
// Moves the QP to the error state and flushes its outstanding work with IBV_WC_WR_FLUSH_ERR.
void qp_enter_error(Qp& qp);
// Completes everything queued on a QP already in error (work posted after the error).
void flush_queues(Qp& qp);
uint32_t qp_num(const Qp& qp);

// Copies `len` bytes into a receive WQE's SGEs starting at byte `offset`; false when the
// SGEs are too short or an lkey does not cover them.
bool scatter(Context& ctx, const RecvWqe& wqe, uint32_t offset, const uint8_t* src, uint32_t len);
uint32_t mtu_bytes(ibv_mtu mtu);
uint64_t timeout_ns(uint8_t timeout);
// The RNR NAK timer field (IBTA table 45) in nanoseconds.
uint64_t rnr_delay_ns(uint8_t timer);

}  // namespace insert::softverbs
