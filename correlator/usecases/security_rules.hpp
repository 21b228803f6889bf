// The security rules (SPEC 10 "Security rules", docs/correlation.md 8) as one table: each
// rule's name, severity, whether its offences count toward rkey_scan, a one-line meaning,
// and the check that decides whether one request message offends it. The finder
// (security.cpp), the records, Alertmanager, the HTML report, `--list-rules` and the
// documentation's rule table (checked by a test) all read this table.
//
// A rule's check sees one message and what the host model says about it at its time
// (`RuleInput`): its target QP and that QP's memory regions, its source QP, whether the
// join matched it to a posted work request. Adding a rule: a check function and a row in
// security_rules.cpp, and its AlertKind here (docs/extending.md).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "correlator/input/records.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"

namespace insert::correlate {

enum class AlertKind : uint8_t {
    rkey_unknown,
    rkey_stale,
    out_of_bounds,
    access_denied,
    rkey_scan,
    unowned_qp,
    peer_mismatch,
    injected_message,
    count
};
inline constexpr std::size_t kAlertKinds = static_cast<std::size_t>(AlertKind::count);

// The memory region a remote access names, as the target process had it at the time.
struct RegionLookup {
    bool needs_region = false;           // WRITE, READ or an atomic
    uint32_t right = 0;                  // the remote right the operation needs
    const MemoryRegion* live = nullptr;  // registered with this rkey in the target's PD
    bool deregistered_before = false;    // one with this rkey was, and was deregistered
};

// What the rules know about one request message.
struct RuleInput {
    explicit RuleInput(const WireMsg& m) : msg(m) {}
    const WireMsg& msg;
    const Incarnation* target = nullptr;  // the QP alive at dst when the message arrived
    const Incarnation* source = nullptr;  // the requester's QP, when traced
    bool target_host_tracing = false;     // dst is a traced host whose trace had begun
    RegionLookup region;                  // with a target: the rkey's region
    WireState wire = WireState::matched;  // the join's verdict on the message
    bool source_lost_records = false;     // the source host lost trace records near it
};

struct SecurityRule {
    AlertKind kind;
    std::string_view name;
    std::string_view severity;  // Alertmanager's label: "critical" or "warning"
    bool feeds_scan;            // counts toward rkey_scan
    std::string_view meaning;   // one line, for --list-rules and the docs
    // Whether the message offends; null for rules decided over other offences (rkey_scan).
    bool (*offends)(const RuleInput&);
};

// Every rule, in AlertKind order.
const std::array<SecurityRule, kAlertKinds>& security_rules();
const SecurityRule& security_rule(AlertKind kind);

std::string_view alert_kind_name(AlertKind k);
std::string_view alert_severity(AlertKind k);

}  // namespace insert::correlate
