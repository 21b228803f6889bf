#include "bench/gen/scenario_json.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace insert::gen {

namespace {

using nlohmann::json;

// Thrown inside this file only, turned into the error string at the entry points.
struct JsonError {
    std::string what;
};

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
    throw JsonError{path + ": " + msg};
}

void check_keys(const json& j, const std::string& path,
                std::initializer_list<std::string_view> allowed) {
    if (!j.is_object()) fail(path, "expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
        bool ok = false;
        for (std::string_view a : allowed) ok = ok || it.key() == a;
        if (!ok) fail(path, "unknown key \"" + it.key() + "\"");
    }
}

template <typename T>
void get(const json& j, const std::string& path, const char* key, T& out) {
    const auto it = j.find(key);
    if (it == j.end()) return;
    const std::string p = path + "." + key;
    if constexpr (std::is_same_v<T, bool>) {
        if (!it->is_boolean()) fail(p, "expected true or false");
        out = it->template get<bool>();
    } else if constexpr (std::is_same_v<T, double>) {
        if (!it->is_number()) fail(p, "expected a number");
        out = it->template get<double>();
    } else if constexpr (std::is_integral_v<T>) {
        if (!it->is_number_integer() ||
            (it->is_number_integer() && it->template get<int64_t>() < 0 &&
             !it->is_number_unsigned()))
            fail(p, "expected a non-negative integer");
        const uint64_t v = it->template get<uint64_t>();
        if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) fail(p, "value too large");
        out = static_cast<T>(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!it->is_string()) fail(p, "expected a string");
        out = it->template get<std::string>();
    }
}

OpType parse_op(const std::string& s, const std::string& path) {
    static constexpr std::pair<std::string_view, OpType> kOps[] = {
        {"SEND", OpType::send},
        {"WRITE", OpType::write},
        {"READ", OpType::read},
        {"CMP_SWAP", OpType::cmp_swap},
        {"FETCH_ADD", OpType::fetch_add}};
    for (const auto& [name, op] : kOps)
        if (s == name) return op;
    fail(path, "unknown op \"" + s + "\" (SEND WRITE READ CMP_SWAP FETCH_ADD)");
}

Action parse_action(const std::string& s, const std::string& path) {
    static constexpr std::pair<std::string_view, Action> kActions[] = {
        {"drop_before", Action::drop_before},
        {"drop_after", Action::drop_after},
        {"swap", Action::swap},
        {"ce_mark", Action::ce_mark},
        {"rnr", Action::rnr},
        {"access_error", Action::access_error},
        {"drop_ack_before", Action::drop_ack_before},
        {"drop_ack_after", Action::drop_ack_after}};
    for (const auto& [name, a] : kActions)
        if (s == name) return a;
    fail(path, "unknown action \"" + s + "\"");
}

ConnTransport parse_transport(const std::string& s, const std::string& path) {
    if (s == "RC") return ConnTransport::rc;
    if (s == "UC") return ConnTransport::uc;
    fail(path, "transport must be \"RC\" or \"UC\"");
}

std::vector<uint32_t> host_list(const json& j, const std::string& path, const char* key) {
    std::vector<uint32_t> out;
    const auto it = j.find(key);
    if (it == j.end()) return out;
    const std::string p = path + "." + key;
    if (!it->is_array()) fail(p, "expected an array of host indexes");
    for (const json& v : *it) {
        if (!v.is_number_unsigned() || v.get<uint64_t>() > 0xFFFF) fail(p, "host indexes");
        out.push_back(static_cast<uint32_t>(v.get<uint64_t>()));
    }
    return out;
}

TraceVerb parse_trace_verb(const std::string& s, const std::string& path) {
    static constexpr std::pair<std::string_view, TraceVerb> kVerbs[] = {
        {"post_send", TraceVerb::post_send},
        {"poll_cq", TraceVerb::poll_cq},
        {"post_recv", TraceVerb::post_recv},
        {"poll_cq_recv", TraceVerb::poll_cq_recv}};
    for (const auto& [name, v] : kVerbs)
        if (s == name) return v;
    fail(path, "unknown verb \"" + s + "\" (post_send poll_cq post_recv poll_cq_recv)");
}

// The elements of the array `a` at `path`, in order, each read by `one(element, its path)`.
template <typename T, typename ReadOne>
void read_array(const json& a, const std::string& path, std::vector<T>& out, ReadOne one) {
    if (!a.is_array()) fail(path, "expected an array");
    for (std::size_t i = 0; i < a.size(); ++i)
        out.push_back(one(a[i], path + "[" + std::to_string(i) + "]"));
}

// A value whose absence means "drawn by the simulator" (a PSN, a QPN): set only if present.
template <typename T>
void get_optional(const json& j, const std::string& path, const char* key, std::optional<T>& out) {
    if (!j.contains(key)) return;
    T v{};
    get(j, path, key, v);
    out = v;
}

void read_clock_offsets(const json& o, const std::string& p, std::vector<int64_t>& out) {
    if (!o.is_array()) fail(p, "expected an array of integers");
    for (const json& v : o) {
        if (!v.is_number_integer()) fail(p, "expected integers");
        out.push_back(v.get<int64_t>());
    }
}

TraceLoss read_lost_record(const json& l, const std::string& q) {
    check_keys(l, q, {"conn", "msg", "verb"});
    TraceLoss tl;
    get(l, q, "conn", tl.conn);
    get(l, q, "msg", tl.msg);
    std::string verb = "post_send";
    get(l, q, "verb", verb);
    tl.verb = parse_trace_verb(verb, q + ".verb");
    return tl;
}

void read_host_trace(const json& h, HostTraceSpec& ht) {
    const std::string p = "$.host_trace";
    check_keys(h, p,
               {"clock_offset_max_ns", "clock_offsets_ns", "post_to_tx_ns", "post_to_tx_jitter_ns",
                "poll_delay_ns", "poll_jitter_ns", "setup_lead_ns", "unsignaled_every", "loss",
                "lost_records", "untraced_hosts", "datapath_off", "exit_without_destroy",
                "processes_per_host", "tenants", "mrs_per_process", "qpn_reuse", "reuse_gap_ns"});
    if (h.contains("clock_offset_max_ns")) {
        // Read unsigned, kept signed: a value past INT64_MAX is clamped (and then refused by
        // validate()) rather than wrapped to a negative bound.
        uint64_t max_offset = 0;
        get(h, p, "clock_offset_max_ns", max_offset);
        ht.clock_offset_max_ns = static_cast<int64_t>(std::min<uint64_t>(max_offset, INT64_MAX));
    }
    if (h.contains("clock_offsets_ns"))
        read_clock_offsets(h["clock_offsets_ns"], p + ".clock_offsets_ns", ht.clock_offsets_ns);
    get(h, p, "post_to_tx_ns", ht.post_to_tx_ns);
    get(h, p, "post_to_tx_jitter_ns", ht.post_to_tx_jitter_ns);
    get(h, p, "poll_delay_ns", ht.poll_delay_ns);
    get(h, p, "poll_jitter_ns", ht.poll_jitter_ns);
    get(h, p, "setup_lead_ns", ht.setup_lead_ns);
    get(h, p, "unsignaled_every", ht.unsignaled_every);
    get(h, p, "loss", ht.loss);
    if (h.contains("lost_records"))
        read_array(h["lost_records"], p + ".lost_records", ht.lost_records, read_lost_record);
    ht.untraced_hosts = host_list(h, p, "untraced_hosts");
    ht.datapath_off = host_list(h, p, "datapath_off");
    get(h, p, "exit_without_destroy", ht.exit_without_destroy);
    get(h, p, "processes_per_host", ht.processes_per_host);
    get(h, p, "tenants", ht.tenants);
    get(h, p, "mrs_per_process", ht.mrs_per_process);
    get(h, p, "qpn_reuse", ht.qpn_reuse);
    get(h, p, "reuse_gap_ns", ht.reuse_gap_ns);
}

AttackKind parse_attack_kind(const std::string& s, const std::string& path) {
    for (std::size_t k = 0; k < kAttackKinds; ++k)
        if (s == attack_kind_name(static_cast<AttackKind>(k))) return static_cast<AttackKind>(k);
    fail(path, "unknown kind \"" + s +
                   "\" (rkey_guess stale_rkey out_of_bounds access_denied peer_mismatch "
                   "spoofed_injection unowned_qp spoofed_first spoofed_unacked)");
}

AttackSpec read_attack(const json& x, const std::string& p) {
    check_keys(x, p, {"kind", "attacker", "victim", "at_ns", "count", "len", "qpn"});
    AttackSpec at;
    std::string kind;
    get(x, p, "kind", kind);
    at.kind = parse_attack_kind(kind, p + ".kind");
    get(x, p, "attacker", at.attacker);
    get(x, p, "victim", at.victim);
    get(x, p, "at_ns", at.at_ns);
    get(x, p, "count", at.count);
    get(x, p, "len", at.len);
    get_optional(x, p, "qpn", at.qpn);
    return at;
}

void read_link(const json& l, Scenario& s) {
    check_keys(l, "$.link", {"rate_gbps", "prop_pre_ns", "prop_post_ns", "receiver_queue"});
    get(l, "$.link", "rate_gbps", s.rate_gbps);
    get(l, "$.link", "prop_pre_ns", s.prop_pre_ns);
    get(l, "$.link", "prop_post_ns", s.prop_post_ns);
    get(l, "$.link", "receiver_queue", s.receiver_queue);
}

void read_timing(const json& t, Timing& tm) {
    const std::string p = "$.timing";
    check_keys(t, p,
               {"ack_delay_ns", "responder_delay_ns", "read_delay_ns", "atomic_delay_ns",
                "retx_timeout_ns", "rnr_timer_ns", "cnp_interval_ns", "cnp_delay_ns",
                "rate_recovery_ns", "cm_delay_ns", "swap_hold_ns"});
    get(t, p, "ack_delay_ns", tm.ack_delay_ns);
    get(t, p, "responder_delay_ns", tm.responder_delay_ns);
    get(t, p, "read_delay_ns", tm.read_delay_ns);
    get(t, p, "atomic_delay_ns", tm.atomic_delay_ns);
    get(t, p, "retx_timeout_ns", tm.retx_timeout_ns);
    get(t, p, "rnr_timer_ns", tm.rnr_timer_ns);
    get(t, p, "cnp_interval_ns", tm.cnp_interval_ns);
    get(t, p, "cnp_delay_ns", tm.cnp_delay_ns);
    get(t, p, "rate_recovery_ns", tm.rate_recovery_ns);
    get(t, p, "cm_delay_ns", tm.cm_delay_ns);
    get(t, p, "swap_hold_ns", tm.swap_hold_ns);
}

HostSpec read_host(const json& h, const std::string& p) {
    check_keys(h, p, {"ip", "vlans"});
    std::string ip;
    get(h, p, "ip", ip);
    const auto addr = proto::IpAddress::parse(ip);
    if (!addr) fail(p + ".ip", "not an IPv4 or IPv6 address: \"" + ip + "\"");
    HostSpec hs;
    hs.ip = *addr;
    if (h.contains("vlans")) {
        if (!h["vlans"].is_array()) fail(p + ".vlans", "expected an array of VLAN IDs");
        for (const json& v : h["vlans"]) {
            if (!v.is_number_unsigned() || v.get<uint64_t>() > 4095)
                fail(p + ".vlans", "VLAN IDs are 0..4095");
            hs.vlans.push_back(static_cast<uint16_t>(v.get<uint64_t>()));
        }
    }
    return hs;
}

SportPolicy read_sport_policy(const json& j) {
    std::string pol;
    get(j, "$", "sport_policy", pol);
    if (pol == "symmetric") return SportPolicy::symmetric;
    if (pol == "per_qp") return SportPolicy::per_qp;
    if (pol == "fixed") return SportPolicy::fixed;
    fail("$.sport_policy", "must be symmetric, per_qp or fixed");
}

ConnSpec read_connection(const json& c, const std::string& p) {
    check_keys(
        c, p, {"a", "b", "transport", "mtu", "psn_a", "psn_b", "qpn_a", "qpn_b", "cm", "workload"});
    ConnSpec cs;
    get(c, p, "a", cs.a);
    get(c, p, "b", cs.b);
    std::string tr = "RC";
    get(c, p, "transport", tr);
    cs.transport = parse_transport(tr, p + ".transport");
    get(c, p, "mtu", cs.mtu);
    get_optional(c, p, "psn_a", cs.psn_a);
    get_optional(c, p, "psn_b", cs.psn_b);
    get_optional(c, p, "qpn_a", cs.qpn_a);
    get_optional(c, p, "qpn_b", cs.qpn_b);
    get(c, p, "cm", cs.cm);
    get(c, p, "workload", cs.workload);
    return cs;
}

void read_random_connections(const json& r, RandomConnections& rc) {
    const std::string p = "$.random_connections";
    check_keys(r, p,
               {"count", "uc_fraction", "mtu_min", "mtu_max", "cm_fraction", "near_wrap_fraction"});
    get(r, p, "count", rc.count);
    get(r, p, "uc_fraction", rc.uc_fraction);
    get(r, p, "mtu_min", rc.mtu_min);
    get(r, p, "mtu_max", rc.mtu_max);
    get(r, p, "cm_fraction", rc.cm_fraction);
    get(r, p, "near_wrap_fraction", rc.near_wrap_fraction);
}

OpWeight read_op_weight(const json& o, const std::string& q) {
    check_keys(o, q, {"op", "weight", "min_len", "max_len", "imm", "inv"});
    OpWeight ow;
    std::string name = "WRITE";
    get(o, q, "op", name);
    ow.op = parse_op(name, q + ".op");
    get(o, q, "weight", ow.weight);
    get(o, q, "min_len", ow.min_len);
    get(o, q, "max_len", ow.max_len);
    get(o, q, "imm", ow.imm);
    get(o, q, "inv", ow.inv);
    return ow;
}

void read_workload(const json& w, Workload& wl) {
    const std::string p = "$.workload";
    check_keys(w, p, {"msgs_per_conn", "start_ns", "gap_ns", "jitter_ns", "ops"});
    get(w, p, "msgs_per_conn", wl.msgs_per_conn);
    get(w, p, "start_ns", wl.start_ns);
    get(w, p, "gap_ns", wl.gap_ns);
    get(w, p, "jitter_ns", wl.jitter_ns);
    if (w.contains("ops")) read_array(w["ops"], p + ".ops", wl.ops, read_op_weight);
}

MessageSpec read_message(const json& m, const std::string& p) {
    check_keys(m, p, {"conn", "op", "len", "at_ns", "imm", "inv"});
    MessageSpec ms;
    get(m, p, "conn", ms.conn);
    std::string name = "WRITE";
    get(m, p, "op", name);
    ms.op = parse_op(name, p + ".op");
    get(m, p, "len", ms.len);
    get(m, p, "at_ns", ms.at_ns);
    get(m, p, "imm", ms.imm);
    get(m, p, "inv", ms.inv);
    return ms;
}

TargetSpec read_target(const json& t, const std::string& q) {
    check_keys(t, q, {"action", "conn", "msg", "pkt", "count"});
    TargetSpec ts;
    std::string a;
    get(t, q, "action", a);
    ts.action = parse_action(a, q + ".action");
    get(t, q, "conn", ts.conn);
    get(t, q, "msg", ts.msg);
    get(t, q, "pkt", ts.pkt);
    get(t, q, "count", ts.count);
    return ts;
}

void read_impairments(const json& im, Impairments& imp) {
    const std::string p = "$.impairments";
    check_keys(im, p,
               {"loss_before", "loss_after", "swap", "ce_mark", "ack_loss_before", "spray_paths",
                "spray_step_ns", "targets"});
    get(im, p, "loss_before", imp.loss_before);
    get(im, p, "loss_after", imp.loss_after);
    get(im, p, "swap", imp.swap);
    get(im, p, "ce_mark", imp.ce_mark);
    get(im, p, "ack_loss_before", imp.ack_loss_before);
    get(im, p, "spray_paths", imp.spray_paths);
    get(im, p, "spray_step_ns", imp.spray_step_ns);
    if (im.contains("targets")) read_array(im["targets"], p + ".targets", imp.targets, read_target);
}

void read_ud(const json& u, UdFlows& ud) {
    check_keys(u, "$.ud", {"count", "max_len"});
    get(u, "$.ud", "count", ud.count);
    get(u, "$.ud", "max_len", ud.max_len);
}

// In the order of Scenario::malformed.
void read_malformed(const json& m, std::array<uint32_t, 4>& counts) {
    check_keys(m, "$.malformed",
               {"length_mismatch", "truncated_short", "reserved_opcode", "truncated_headers"});
    get(m, "$.malformed", "length_mismatch", counts[0]);
    get(m, "$.malformed", "truncated_short", counts[1]);
    get(m, "$.malformed", "reserved_opcode", counts[2]);
    get(m, "$.malformed", "truncated_headers", counts[3]);
}

// The sections in the order of the file format (docs/insert-gen.md), each read whole before
// the next: the first error met is the one reported, so this order decides which of several
// errors a file shows.
Scenario parse(const json& j) {
    Scenario s;
    check_keys(j, "$",
               {"name", "description", "link", "timing", "hosts", "sport_policy", "fixed_sport",
                "connections", "random_connections", "workload", "messages", "impairments", "ud",
                "background", "malformed", "host_trace", "attacks"});
    get(j, "$", "name", s.name);
    get(j, "$", "description", s.description);
    if (j.contains("link")) read_link(j["link"], s);
    if (j.contains("timing")) read_timing(j["timing"], s.timing);
    if (j.contains("hosts")) read_array(j["hosts"], "$.hosts", s.hosts, read_host);
    if (j.contains("sport_policy")) s.sport_policy = read_sport_policy(j);
    get(j, "$", "fixed_sport", s.fixed_sport);
    if (j.contains("connections"))
        read_array(j["connections"], "$.connections", s.conns, read_connection);
    if (j.contains("random_connections"))
        read_random_connections(j["random_connections"], s.random_conns);
    if (j.contains("workload")) read_workload(j["workload"], s.workload);
    if (j.contains("messages")) read_array(j["messages"], "$.messages", s.messages, read_message);
    if (j.contains("impairments")) read_impairments(j["impairments"], s.imp);
    if (j.contains("ud")) read_ud(j["ud"], s.ud);
    get(j, "$", "background", s.background);
    if (j.contains("malformed")) read_malformed(j["malformed"], s.malformed);
    if (j.contains("host_trace")) read_host_trace(j["host_trace"], s.host_trace);
    if (j.contains("attacks")) read_array(j["attacks"], "$.attacks", s.attacks, read_attack);
    return s;
}

}  // namespace

std::optional<Scenario> scenario_from_json(const std::string& text, std::string& error) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        error = std::string("invalid JSON: ") + e.what();
        return std::nullopt;
    }
    try {
        Scenario s = parse(j);
        if (s.name.empty()) s.name = "custom";
        error = validate(s);
        if (!error.empty()) return std::nullopt;
        return s;
    } catch (const JsonError& e) {
        error = e.what;
    } catch (const json::exception& e) {
        error = e.what();
    }
    return std::nullopt;
}

std::optional<Scenario> load_scenario_file(const std::string& path, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = path + ": cannot open scenario file";
        return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    auto s = scenario_from_json(ss.str(), error);
    if (!s) error = path + ": " + error;
    return s;
}

}  // namespace insert::gen
