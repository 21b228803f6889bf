#include "correlator/usecases/security_rules.hpp"

namespace insert::correlate {

namespace {

// Bytes of target memory the request touches: the RETH length, or 8 for atomics.
uint64_t access_length(const WireMsg& m) {
    if (m.op == Op::cmp_swap || m.op == Op::fetch_add) return 8;
    return m.dma_len != kNone ? static_cast<uint64_t>(m.dma_len) : m.bytes;
}

bool in_bounds(const WireMsg& m, const MemoryRegion& mr) {
    if (m.va == kNone) return false;
    const auto va = static_cast<uint64_t>(m.va);
    const uint64_t len = access_length(m);
    return va >= mr.addr && len <= mr.length && va - mr.addr <= mr.length - len;
}

// The four memory rules are one decision taken in SPEC order (the rkey's region, then its
// bounds, then its rights): each rule is the first test that fails.
bool rkey_unknown(const RuleInput& in) {
    return in.target && in.region.needs_region && !in.region.live && !in.region.deregistered_before;
}

bool rkey_stale(const RuleInput& in) {
    return in.target && in.region.needs_region && !in.region.live && in.region.deregistered_before;
}

bool out_of_bounds(const RuleInput& in) {
    return in.target && in.region.live && !in_bounds(in.msg, *in.region.live);
}

bool access_denied(const RuleInput& in) {
    if (!in.target || !in.region.live || !in_bounds(in.msg, *in.region.live)) return false;
    const uint32_t need = in.region.right;
    return !(in.region.live->access & need) ||
           (in.target->has_access && !(in.target->qp_access & need));
}

// A traced host whose trace had begun, and no live QP with the message's QPN there.
bool unowned_qp(const RuleInput& in) {
    return !in.target && in.target_host_tracing;
}

// The connected QP's peer (its RTR transition) is another address than the sender's.
bool peer_mismatch(const RuleInput& in) {
    return in.target && in.target->has_peer && !(in.msg.src_ip == in.target->peer_ip);
}

// No posted work request matches a message of a QP whose data path is traced, whatever
// the message's status (SPEC 10 v1.3): a forged WRITE First that never completes is an
// injection too. A posted message whose last packets the observer missed still matches
// its request (the join lets a request cover the bytes seen of an unfinished message).
bool injected_message(const RuleInput& in) {
    return in.target && in.wire == WireState::wire_only_covered && !in.source_lost_records;
}

constexpr std::array<SecurityRule, kAlertKinds> kRules = {{
    {AlertKind::rkey_unknown, "rkey_unknown", "warning", true,
     "a remote access whose rkey the target process never registered in the QP's PD",
     &rkey_unknown},
    {AlertKind::rkey_stale, "rkey_stale", "warning", true,
     "a remote access whose rkey was registered there but deregistered before it", &rkey_stale},
    {AlertKind::out_of_bounds, "out_of_bounds", "warning", true,
     "a remote access with a valid rkey outside its memory region", &out_of_bounds},
    {AlertKind::access_denied, "access_denied", "warning", true,
     "a remote access the memory region or the QP does not allow (write, read, atomic)",
     &access_denied},
    {AlertKind::rkey_scan, "rkey_scan", "critical", false,
     "--scan-threshold or more rkey/access offences from one source IP within --scan-window",
     nullptr},
    {AlertKind::unowned_qp, "unowned_qp", "warning", false,
     "requests to a QPN that no live QP owns on a traced host", &unowned_qp},
    {AlertKind::peer_mismatch, "peer_mismatch", "critical", false,
     "requests to a connected QP from an IP other than its peer", &peer_mismatch},
    {AlertKind::injected_message, "injected_message", "critical", false,
     "a message from a traced QP that no application posted", &injected_message},
}};

constexpr bool rules_in_kind_order() {
    for (std::size_t k = 0; k < kRules.size(); ++k)
        if (static_cast<std::size_t>(kRules[k].kind) != k) return false;
    return true;
}
static_assert(rules_in_kind_order(), "security rules: one row per AlertKind, in its order");

}  // namespace

const std::array<SecurityRule, kAlertKinds>& security_rules() {
    return kRules;
}

const SecurityRule& security_rule(AlertKind kind) {
    return kRules[static_cast<std::size_t>(kind)];
}

std::string_view alert_kind_name(AlertKind k) {
    return k < AlertKind::count ? security_rule(k).name : "unknown";
}

std::string_view alert_severity(AlertKind k) {
    return k < AlertKind::count ? security_rule(k).severity : "warning";
}

}  // namespace insert::correlate
