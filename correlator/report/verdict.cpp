#include "correlator/report/verdict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "correlator/report/congestion_text.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"
#include "dataplane/common/qpn_text.hpp"

namespace insert::correlate::report {

using simdjson::SUCCESS;
using simdjson::dom::element;

namespace {

// What the first screen (1366 x 768) holds besides the title; the rest is in the tables.
constexpr std::size_t kGroupsShown = 12;
constexpr std::size_t kEpisodesShown = 2;
constexpr std::size_t kAppsShown = 4;

std::string plural(uint64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string at(const ReportData& d, std::optional<int64_t> t_ns) {
    return t_ns ? fmt::format("{:.6f} s", ns_between(d.t_min_ns, *t_ns, 1e9)) : std::string("-");
}

uint64_t count_of(const ReportData& d, const char* type) {
    const auto it = d.by_type.find(type);
    return it == d.by_type.end() ? 0 : it->second;
}

// The nodes episodes went toward, in the order first seen.
std::vector<std::string> episode_nodes(const ReportData& d) {
    std::vector<std::string> nodes;
    for (const EpisodeSpan& s : d.spans)
        if (std::find(nodes.begin(), nodes.end(), s.node) == nodes.end()) nodes.push_back(s.node);
    return nodes;
}

std::string headline(const ReportData& d, bool live) {
    const AlertGroups& g = d.alert_groups;
    const uint64_t episodes = count_of(d, "congestion");
    const std::string so_far = live ? " so far" : "";
    if (g.alerts() == 0 && episodes == 0)
        return fmt::format("No alerts, no congestion episodes{}.", so_far);
    std::string text;
    if (g.alerts()) {
        text = plural(g.alerts(), "alert", "alerts");
        if (g.critical()) text += fmt::format(" ({} critical)", g.critical());
        text += fmt::format(" against {}", plural(g.victims().size(), "victim", "victims"));
        std::string kinds;
        for (const auto& [kind, n] : g.kinds()) {
            if (!kinds.empty()) kinds += ", ";
            kinds += fmt::format("{} {}", n, kind);
        }
        text += fmt::format(": {}.", kinds);
    } else {
        text = fmt::format("No alerts{}.", so_far);
    }
    if (episodes) {
        const std::vector<std::string> nodes = episode_nodes(d);
        std::string toward;
        for (std::size_t i = 0; i < nodes.size() && i < 4; ++i) {
            if (i) toward += ", ";
            toward += nodes[i];
        }
        if (nodes.size() > 4) toward += fmt::format(" and {} more nodes", nodes.size() - 4);
        text += fmt::format(" {} toward {}.",
                            plural(episodes, "congestion episode", "congestion episodes"), toward);
    } else {
        text += fmt::format(" No congestion episodes{}.", so_far);
    }
    return text;
}

void cell(std::string& out, std::string_view text) {
    out += "<td>";
    append_html(out, text);
    out += "</td>";
}

// The groups the verdict lists, in their order: first each kind's first group, then each
// victim's first, then the rest, up to kGroupsShown - every kind and, if it can, every
// victim is on the first screen.
std::vector<const AlertGroup*> shown(const std::vector<const AlertGroup*>& ordered) {
    std::vector<bool> pick(ordered.size(), false);
    std::set<std::string_view> kinds, victims;
    std::size_t picked = 0;
    const auto take = [&](std::size_t i) {
        pick[i] = true;
        ++picked;
        kinds.insert(ordered[i]->kind);
        victims.insert(ordered[i]->victim);
    };
    for (std::size_t i = 0; i < ordered.size() && picked < kGroupsShown; ++i)
        if (!kinds.count(ordered[i]->kind)) take(i);
    for (std::size_t i = 0; i < ordered.size() && picked < kGroupsShown; ++i)
        if (!pick[i] && !victims.count(ordered[i]->victim)) take(i);
    for (std::size_t i = 0; i < ordered.size() && picked < kGroupsShown; ++i)
        if (!pick[i]) take(i);
    std::vector<const AlertGroup*> out;
    for (std::size_t i = 0; i < ordered.size(); ++i)
        if (pick[i]) out.push_back(ordered[i]);
    return out;
}

void append_alert_groups(std::string& out, const ReportData& d) {
    const AlertGroups& g = d.alert_groups;
    // A row reads as a sentence: KIND from SOURCE against VICTIM, N alerts, first at T.
    out +=
        "<h3>Alerts: who attacked whom</h3><table id=\"verdict-alerts\"><thead><tr><th>alert</th>"
        "<th>from</th><th>against</th><th>alerts (offences)</th><th>first at</th></tr></thead>"
        "<tbody>";
    const std::vector<const AlertGroup*> groups = shown(g.ordered());
    uint64_t hidden = g.alerts() - g.ungrouped();
    for (const AlertGroup* group : groups) {
        const AlertGroup& a = *group;
        hidden -= a.alerts;
        out += "<tr><td class=\"kind\"><span class=\"sev ";
        append_html(out, a.severity);
        out += "\">";
        append_html(out, a.severity);
        out += "</span> ";
        append_html(out, a.kind);
        out += "</td>";
        // SPEC 10 v1.3: a source only claimed is never said to have attacked.
        if (a.claimed) {
            out += "<td class=\"claimed\">claimed source ";
            append_html(out, a.source);
            out += " (possibly spoofed)";
        } else {
            out += "<td>";
            append_html(out, a.source);
        }
        // Where its packets really came from (docs/correlation.md 8).
        if (!a.origin.empty()) {
            out += "<br><span class=\"origin\">";
            append_html(out, a.origin);
            out += "</span>";
        }
        out += "</td>";
        std::string victim = a.victim;
        for (std::size_t k = 0; k < a.victim_qpns.size(); ++k) {
            victim += k ? ", " : " QP ";
            victim += qpn_text(a.victim_qpns[k]);
        }
        if (a.more_qpns) victim += fmt::format(" and {} more", a.more_qpns);
        if (!a.victim_traced) victim += " (no traced process owns it)";
        cell(out, victim);
        cell(out, a.offences == a.alerts ? std::to_string(a.alerts)
                                         : fmt::format("{} ({})", a.alerts, a.offences));
        out += "<td class=\"time\">";
        append_html(out, at(d, a.t_first_ns));
        out += "</td></tr>";
    }
    out += "</tbody></table>";
    if (hidden || g.ungrouped())
        out += fmt::format(
            "<p class=\"note\">{} more alerts not listed here: <a href=\"#alerts\">the alerts"
            "</a> below.</p>",
            hidden + g.ungrouped());
}

void append_episode(std::string& out, const ReportData& d, element e) {
    out += "<div class=\"episode\"><p><b>Congestion</b> ";
    append_html(out, episode_headline(e));
    out += ", from ";
    append_html(out, at(d, int_field(e, "t_start_ns")));
    // Who congested whom: the contributors beside the victims.
    out +=
        ".</p><table class=\"roles\"><thead><tr><th>congested by (share of the episode's "
        "bytes)</th><th>slowed down (network latency per message)</th></tr></thead><tbody><tr>"
        "<td><ul>";
    const std::vector<element> contributors = episode_contributors(e);
    if (contributors.empty()) out += "<li>-</li>";
    for (std::size_t k = 0; k < contributors.size() && k < kAppsShown; ++k) {
        out += "<li>";
        append_contributor(out, contributors[k], e);
        out += "</li>";
    }
    if (contributors.size() > kAppsShown)
        out += fmt::format("<li>and {} more (the episodes' table below)</li>",
                           contributors.size() - kAppsShown);
    out += "</ul></td><td><ul>";
    const std::vector<element> victims = episode_victims(e);
    if (victims.empty()) out += "<li>-</li>";
    for (std::size_t k = 0; k < victims.size() && k < kAppsShown; ++k) {
        out += "<li>";
        append_victim(out, victims[k], e);
        out += "</li>";
    }
    if (victims.size() > kAppsShown)
        out += fmt::format("<li>and {} more (the episodes' table below)</li>",
                           victims.size() - kAppsShown);
    out += "</ul></td></tr></tbody></table></div>";
}

void append_episodes(std::string& out, const ReportData& d) {
    out += "<h3>Congestion: who congested whom</h3>";
    // The worst first: weigh every kept episode, then lay out the first few.
    simdjson::dom::parser parser;
    std::vector<std::pair<double, std::size_t>> order;
    for (std::size_t i = 0; i < d.episodes.size(); ++i) {
        element e;
        if (parser.parse(d.episodes[i]).get(e) == SUCCESS) order.emplace_back(episode_weight(e), i);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t k = 0; k < order.size() && k < kEpisodesShown; ++k) {
        element e;
        if (parser.parse(d.episodes[order[k].second]).get(e) == SUCCESS) append_episode(out, d, e);
    }
    const uint64_t total = count_of(d, "congestion");
    if (total > kEpisodesShown)
        out += fmt::format(
            "<p class=\"note\">and {} more episodes: <a href=\"#episodes\">the episodes</a> "
            "below.</p>",
            total - kEpisodesShown);
}

}  // namespace

void append_verdict(std::string& out, const ReportData& d, bool live) {
    const AlertGroups& g = d.alert_groups;
    const bool episodes = count_of(d, "congestion") > 0;
    const char* tone = g.critical() ? "critical" : g.alerts() || episodes ? "warning" : "quiet";
    out += fmt::format("<section id=\"verdict\" class=\"{}\"><h2>What happened</h2>", tone);
    out += "<p class=\"headline\" id=\"verdict-headline\">";
    append_html(out, headline(d, live));
    out += "</p>";
    if (g.alerts()) append_alert_groups(out, d);
    if (episodes) append_episodes(out, d);
    out += "</section>\n";
}

}  // namespace insert::correlate::report
