// A scenario's attacks (docs/insert-gen.md "Attacks") turned into what the simulator runs.
//
// The rkey attacks (rkey_guess, stale_rkey, out_of_bounds, access_denied) are work an
// attacker's process posts through verbs, so they are ordinary traffic with a bad target:
// each gets an RC connection of its own from the attacker's host to the victim's process
// (a server accepting any client, as perftest does), after every scenario connection, and
// its WRITEs carry an rkey or address the victim's NIC rejects with a NAK "remote access
// error" (the QP then goes to error: a guess needs a fresh connection, and guesses posted
// together all reach the wire before the NAK comes back).
//
// The injections (peer_mismatch, spoofed_injection, unowned_qp) are WRITE Only packets put
// on the wire at the observation point by a raw sender, with no verbs call: they are
// messages of no connection's slice, appended to the message table. From the attacker's
// address to a connected QP, or to a QPN nobody owns, the victim's NIC drops them (as
// softverbs does; docs/demo.md); one with the victim QP's peer address spoofed and the PSN
// the QP expects next is accepted and acknowledged like its peer's own - it is injected once
// that peer has sent its last message, so that the peer never sends at that PSN itself.
//
// Everything is drawn from a random stream of its own: a scenario without attacks is
// generated exactly as before.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/gen/host_layout.hpp"
#include "bench/gen/huge_vector.hpp"
#include "bench/gen/rng.hpp"
#include "bench/gen/scenario.hpp"

namespace insert::gen {

struct MsgInfo;
struct ConnInfo;

// Checks `sc.attacks` against the rest of the scenario; an error naming the field, or
// empty. `per_conn`: the messages each connection posts.
std::string validate_attacks(const Scenario& sc, const std::vector<uint32_t>& per_conn);

// A packet the simulator injects at the observation point (a message of no slice).
struct Injection {
    AttackKind kind = AttackKind::peer_mismatch;
    uint32_t uid = 0;   // its message
    uint32_t conn = 0;  // the victim connection
    uint16_t src_host = 0, dst_host = 0;
    uint16_t nic_host = 0;  // whose NIC sends it: the attacker's (spoofed: not src_host)
    uint32_t dest_qpn = 0;
    uint64_t at_ns = 0;  // spoofed_injection: the earliest time (it waits for the peer)
};

class AttackPlan {
  public:
    AttackPlan(const Scenario& sc, uint64_t seed);
    bool empty() const { return sc_.attacks.empty(); }

    // Set-up, in the simulator's order. 1: a connection per rkey attack, after `specs`
    // (every scenario connection).
    void add_connections(std::vector<ConnSpec>& specs);
    // 2: their WRITEs, as explicit messages of those connections.
    const std::vector<MessageSpec>& messages() const { return messages_; }
    // 3: the attacker's process owns the requester side, the victim's process the
    // responder side; a stale_rkey's MR is registered and deregistered before it.
    void assign(HostLayout& layout);
    // 4: once the message table is built: the rkey attacks' rkeys and addresses (and the
    // responder's remote access error); the injections' messages appended to `msgs`.
    std::vector<Injection> apply(HugeVector<MsgInfo>& msgs, const HugeVector<ConnInfo>& conns,
                                 const HostLayout& layout);
    // Messages the attacks append (reserve room for them).
    std::size_t injected_messages() const;

  private:
    bool verbs_attack(const AttackSpec& a) const { return a.kind <= AttackKind::access_denied; }

    const Scenario& sc_;
    Rng rng_;
    uint32_t first_conn_ = 0;            // the first rkey attack connection
    std::vector<uint32_t> attack_conn_;  // per attack: its connection, or UINT32_MAX
    std::vector<MessageSpec> messages_;
};

}  // namespace insert::gen
