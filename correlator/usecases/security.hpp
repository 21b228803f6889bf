// RDMA security alerts (SPEC 10 "Security rules", docs/correlation.md 8): remote accesses
// the target process never allowed (rkey_unknown, rkey_stale, out_of_bounds,
// access_denied), rkey scanning, requests to QPs nobody owns, requests from an IP other
// than the connected peer, and messages no application posted. Each offending message is
// checked against the host's view at its time; offences of one kind, victim and source
// less than --alert-gap apart are one alert with their count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/join/qp_owner.hpp"
#include "correlator/usecases/origin.hpp"
#include "correlator/usecases/security_rules.hpp"

namespace insert::correlate {

struct SecurityOptions {
    int64_t alert_gap_ns = 1'000'000'000;    // offences closer than this are one alert
    int64_t scan_window_ns = 1'000'000'000;  // rkey_scan: offences of one source within...
    uint32_t scan_threshold = 8;             // ... this many or more
    int64_t lost_guard_ns = 1'000'000'000;   // no injected_message near a host's trace loss
};

// One offending message.
struct Offence {
    AlertKind kind = AlertKind::rkey_unknown;
    int64_t t = 0;  // its first packet at the observer
    WireMsg msg;
    Ip victim_ip;
    uint32_t victim_qpn = 0;
    int64_t victim_created = kNone;  // the target incarnation's t_create (kNone: unowned)
    QpOwner victim;
    Ip source_ip;
    int64_t source_qpn = kNone;
    QpOwner source;
    // SPEC 10 v1.3 `source.claimed`: false only when the named source's own trace vouches
    // for the message (a post_send matched it); an untraced source, every peer_mismatch and
    // every injected_message only claim to be it (the address may be spoofed).
    bool claimed = true;
    // wants_origin(kind): where the message came from against the claimed address's
    // earlier messages (docs/correlation.md 8; `origin.seen.known` false: null).
    OriginEvidence origin;
    uint64_t origin_query = 0;  // live: its evidence not known yet (OriginFeed's number)
};

struct Alert {
    AlertKind kind = AlertKind::rkey_unknown;
    int64_t t_ns = 0;  // first offence (observer clock); rkey_scan: when it reached the threshold
    int64_t t_last_ns = 0;        // last offence
    uint64_t count = 0;           // offending messages
    Offence first;                // victim, source, and the first offending message as evidence
    std::vector<uint32_t> rkeys;  // distinct rkeys tried, the first 16
    uint64_t distinct_rkeys = 0;
    uint64_t victims = 1;  // rkey_scan: distinct target QPs
    uint64_t pkts = 0;
    // first.claimed: any of its offences' source was only claimed.
};

// A set of security rules, one bit per AlertKind.
using RuleSet = uint32_t;
constexpr RuleSet rule_bit(AlertKind k) {
    return RuleSet{1} << static_cast<unsigned>(k);
}
inline constexpr RuleSet kEveryRule = ~RuleSet{0};

// Every offending message of `msgs` (docs/correlation.md 8) against `rules`; with `only`,
// of the messages it marks.
std::vector<Offence> find_offences(const WireMsgs& msgs, const JoinResult& join,
                                   const HostModel& model, const HostNames& names,
                                   const SecurityOptions& options,
                                   const std::vector<bool>* only = nullptr,
                                   RuleSet rules = kEveryRule);

// A batch run: evidence.origin of every offence that wants it, from every message and the
// join's verdict on it (docs/correlation.md 8).
void attach_origins(std::vector<Offence>& offences, const WireMsgs& msgs, const JoinResult& join);

// Every alert of these offences (a batch run; alert_tracker.cpp: one tracker with everything
// settled at once), sorted by (t_ns, kind, victim, source).
std::vector<Alert> aggregate_alerts(std::vector<Offence> offences, const SecurityOptions& options);

}  // namespace insert::correlate
