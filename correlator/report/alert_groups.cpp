#include "correlator/report/alert_groups.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "correlator/report/chart_data.hpp"
#include "correlator/report/json_fields.hpp"
#include "correlator/usecases/origin.hpp"

namespace insert::correlate::report {

using simdjson::SUCCESS;
using simdjson::dom::element;

namespace {

// An origin object's values (evidence.origin, or its `usual`), if it has the two always
// there.
std::optional<OriginWords> origin_words_of(element o) {
    const auto mac = text_field(o, "src_mac");
    const auto ttl = int_field(o, "ttl");
    if (!mac || !ttl) return std::nullopt;
    OriginWords w;
    w.mac = std::string(*mac);
    w.ttl = *ttl;
    w.port = int_field(o, "port");
    return w;
}

// evidence.origin in words, and whether some of it differs; empty without one.
std::pair<std::string, bool> origin_text(element alert, const std::string& claimed_ip) {
    element origin;
    if (alert["evidence"]["origin"].get(origin) != SUCCESS) return {};
    const std::optional<OriginWords> seen = origin_words_of(origin);
    if (!seen) return {};
    element usual;
    std::optional<OriginWords> usual_words;
    if (origin["usual"].get(usual) == SUCCESS) usual_words = origin_words_of(usual);
    std::vector<std::string> differs;
    simdjson::dom::array names;
    if (origin["differs"].get(names) == SUCCESS)
        for (element name : names)
            if (std::string_view v; name.get(v) == SUCCESS) differs.emplace_back(v);
    return {origin_sentence(*seen, usual_words, differs, claimed_ip), !differs.empty()};
}

}  // namespace

std::string party_name(element p) {
    const std::string ip = field_text(p, "ip");
    if (!int_field(p, "pid")) return ip;
    std::string name = fmt::format("{}[{}]", field_text(p, "comm"), field_text(p, "pid"));
    if (const auto host = text_field(p, "host")) {
        name += '@';
        name += *host;
    }
    return fmt::format("{} {}", name, ip);
}

void AlertGroups::add(element r) {
    ++alerts_;
    const std::string kind(text_field(r, "kind").value_or("?"));
    const std::string severity(text_field(r, "severity").value_or("-"));
    if (severity == "critical") ++critical_;
    if (by_kind_.count(kind) || by_kind_.size() < max_kinds_)
        ++by_kind_[kind];
    else
        ++by_kind_["other kinds"];

    element victim, source;
    const bool has_victim = r["victim"].get(victim) == SUCCESS;
    const bool has_source = r["source"].get(source) == SUCCESS;
    bool claimed = false;
    if (!has_source || source["claimed"].get(claimed) != SUCCESS) claimed = false;
    const std::string victim_name = has_victim ? party_name(victim) : "-";
    const std::string source_name = has_source ? party_name(source) : "-";
    std::string key = kind;
    for (const std::string* part : {&victim_name, &source_name}) {
        key += '\x1f';
        key += *part;
    }
    key += claimed ? "\x1f"
                     "1"
                   : "\x1f"
                     "0";

    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        if (groups_.size() >= max_groups_) {
            ++ungrouped_;
            return;
        }
        it = by_key_.emplace(std::move(key), groups_.size()).first;
        AlertGroup g;
        g.kind = kind;
        g.severity = severity;
        g.victim = victim_name;
        g.victim_traced = has_victim && int_field(victim, "pid").has_value();
        g.source = source_name;
        g.claimed = claimed;
        groups_.push_back(std::move(g));
    }
    AlertGroup& g = groups_[it->second];
    if (g.origin.empty() || !g.origin_differs) {
        auto [text, differs] =
            origin_text(r, has_source ? field_text(source, "ip") : std::string("-"));
        if (!text.empty() && (g.origin.empty() || differs)) {
            g.origin = std::move(text);
            g.origin_differs = differs;
        }
    }
    ++g.alerts;
    g.offences += uint_field(r, "count").value_or(1);
    if (const auto t = int_field(r, "t_ns"); t && (!g.t_first_ns || *t < *g.t_first_ns))
        g.t_first_ns = t;
    if (const auto qpn = has_victim ? uint_field(victim, "qpn") : std::nullopt) {
        auto& qpns = g.victim_qpns;
        if (std::find(qpns.begin(), qpns.end(), *qpn) != qpns.end()) return;
        if (qpns.size() < AlertGroup::kShownQpns)
            qpns.push_back(*qpn);
        else
            ++g.more_qpns;
    }
}

std::vector<const AlertGroup*> AlertGroups::ordered() const {
    std::vector<const AlertGroup*> out;
    for (const AlertGroup& g : groups_) out.push_back(&g);
    const auto rank = [](const AlertGroup* g) {
        return g->severity == "critical" ? 0 : g->severity == "warning" ? 1 : 2;
    };
    std::stable_sort(out.begin(), out.end(), [&](const AlertGroup* a, const AlertGroup* b) {
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        if (a->t_first_ns.has_value() != b->t_first_ns.has_value())
            return a->t_first_ns.has_value();
        if (a->t_first_ns != b->t_first_ns) return a->t_first_ns < b->t_first_ns;
        // Alerts at the same time by what they are, not by which record came first: the
        // page the same whatever order its records came in (the bus's merged view).
        return std::tie(a->kind, a->victim, a->source) < std::tie(b->kind, b->victim, b->source);
    });
    return out;
}

std::vector<std::pair<std::string, uint64_t>> AlertGroups::kinds() const {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (const std::string& kind : known_alert_kinds())
        if (const auto it = by_kind_.find(kind); it != by_kind_.end()) out.emplace_back(*it);
    for (const auto& [kind, n] : by_kind_)
        if (std::find(known_alert_kinds().begin(), known_alert_kinds().end(), kind) ==
            known_alert_kinds().end())
            out.emplace_back(kind, n);
    return out;
}

std::vector<std::string> AlertGroups::victims() const {
    std::vector<std::string> out;
    for (const AlertGroup& g : groups_)
        if (std::find(out.begin(), out.end(), g.victim) == out.end()) out.push_back(g.victim);
    return out;
}

}  // namespace insert::correlate::report
