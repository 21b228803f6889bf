#include "correlator/report/congestion_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "correlator/report/alert_groups.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"

namespace insert::correlate::report {

using simdjson::SUCCESS;
using simdjson::dom::array;
using simdjson::dom::element;

std::string duration_text(double ns, bool sign) {
    const double a = std::fabs(ns);
    const char* unit = "ns";
    double v = ns;
    if (a >= 1e9) {
        unit = "s";
        v = ns / 1e9;
    } else if (a >= 1e6) {
        unit = "ms";
        v = ns / 1e6;
    } else if (a >= 1e3) {
        unit = "us";
        v = ns / 1e3;
    }
    // Three significant digits: enough to compare, few enough to read.
    const double av = std::fabs(v);
    const int digits = std::string_view(unit) == "ns" ? 0 : av < 10 ? 2 : av < 100 ? 1 : 0;
    return fmt::format("{}{:.{}f} {}", sign && ns >= 0 ? "+" : "", v, digits, unit);
}

std::string bytes_text(double bytes) {
    static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    std::size_t u = 0;
    while (std::fabs(bytes) >= 1000 && u + 1 < std::size(units)) {
        bytes /= 1000;
        ++u;
    }
    if (u == 0) return fmt::format("{:.0f} B", bytes);
    return fmt::format("{:.{}f} {}", bytes,
                       std::fabs(bytes) < 10    ? 2
                       : std::fabs(bytes) < 100 ? 1
                                                : 0,
                       units[u]);
}

std::string share_text(std::optional<double> f) {
    if (!f) return "-";
    if (*f > 0 && *f < 0.0005) return "<0.1%";
    return fmt::format("{:.{}f}%", *f * 100, *f < 0.1 ? 1 : 0);
}

std::optional<double> number_field(element e, const char* key) {
    element v;
    double d = 0;
    if (e[key].get(v) != SUCCESS || v.get(d) != SUCCESS) return std::nullopt;
    return d;
}

namespace {

std::vector<element> list(element episode, const char* name) {
    std::vector<element> out;
    array a;
    if (episode[name].get(a) != SUCCESS) return out;
    for (element e : a)
        if (e.is_object()) out.push_back(e);
    return out;
}

bool same_app(element a, element b) {
    for (const char* f : {"ip", "pid", "comm", "cgroup", "host"})
        if (field_text(a, f) != field_text(b, f)) return false;
    return true;
}

}  // namespace

// In the record's order: the correlator lists victims by how far their p99 rose over their
// baseline, contributors by bytes (docs/correlation.md 9).
std::vector<element> episode_victims(element episode) {
    return list(episode, "victims");
}

std::vector<element> episode_contributors(element episode) {
    return list(episode, "contributors");
}

namespace {

// Whether `app` is also in the episode's other list: its flag when the record has one (v1.3),
// else whether the list names the same application.
bool also_in(element app, const char* flag_name, element episode, const char* other) {
    bool b = false;
    if (app[flag_name].get(b) == SUCCESS) return b;
    for (element o : list(episode, other))
        if (same_app(app, o)) return true;
    return false;
}

}  // namespace

void append_victim(std::string& out, element v, element episode) {
    out += "<b>";
    append_html(out, party_name(v));
    out += "</b>: ";
    const auto added = number_field(v, "added_net_ns_mean");
    const auto added_p99 = number_field(v, "added_net_ns_p99");
    const auto mean = number_field(v, "net_ns_mean");
    const auto p99 = number_field(v, "net_ns_p99");
    const auto usual = number_field(v, "baseline_net_ns_mean");
    std::string text;
    if (added) {
        text = fmt::format("{} per message (p99 {})", duration_text(*added, true),
                           added_p99 ? duration_text(*added_p99, true) : "-");
        // Its latency in the episode over its usual one (the record's mean, else usual + added).
        if (usual && *usual > 0)
            text += fmt::format(", {:.1f}x its usual {}", mean.value_or(*usual + *added) / *usual,
                                duration_text(*usual));
    } else if (mean) {
        // No message of its own to that node outside any episode: nothing to subtract.
        text = fmt::format("{} per message (p99 {}), added: - (no baseline of its own",
                           duration_text(*mean), p99 ? duration_text(*p99) : "-");
        element signals;
        const auto node = episode["signals"].get(signals) == SUCCESS
                              ? number_field(signals, "baseline_net_ns")
                              : std::nullopt;
        text += node ? fmt::format("; the node's: {})", duration_text(*node)) : std::string(")");
    } else {
        text = "- per message (p99 -)";
    }
    if (const auto msgs = uint_field(v, "msgs"))
        text += fmt::format(", {} message{}", *msgs, *msgs == 1 ? "" : "s");
    if (const auto cnps = uint_field(v, "cnps"); cnps && *cnps)
        text += fmt::format(", {} CNP{}", *cnps, *cnps == 1 ? "" : "s");
    if (also_in(v, "contributor", episode, "contributors")) {
        std::optional<double> share = number_field(v, "bytes_share");
        for (element c : list(episode, "contributors"))
            if (same_app(v, c)) share = number_field(c, "bytes_share");
        text += share ? fmt::format("; also contributes {} of the bytes", share_text(share))
                      : std::string("; also a contributor");
    }
    append_html(out, text);
}

void append_contributor(std::string& out, element c, element episode) {
    out += "<b>";
    append_html(out, party_name(c));
    out += "</b>: ";
    std::string text = fmt::format("{} of the bytes", share_text(number_field(c, "bytes_share")));
    const auto bytes = number_field(c, "bytes");
    const auto msgs = uint_field(c, "msgs");
    if (bytes || msgs)
        text += fmt::format(" ({} in {} message{})", bytes ? bytes_text(*bytes) : "-",
                            msgs ? std::to_string(*msgs) : "-", msgs && *msgs == 1 ? "" : "s");
    if (also_in(c, "victim", episode, "victims")) text += ", also a victim";
    append_html(out, text);
}

std::string episode_headline(element e) {
    element where, signals;
    std::string text = "toward ";
    if (e["where"].get(where) == SUCCESS) {
        text += field_text(where, "node");
        array ips;
        if (where["dst_ips"].get(ips) == SUCCESS && ips.size()) {
            std::string list;
            for (element ip : ips) {
                if (!list.empty()) list += ", ";
                list += cell_text(ip);
            }
            text += fmt::format(" ({})", list);
        }
    } else {
        text += "-";
    }
    const auto t0 = int_field(e, "t_start_ns"), t1 = int_field(e, "t_end_ns");
    if (t0 && t1) text += fmt::format(" for {}", duration_text(ns_between(*t0, *t1, 1)));
    if (e["signals"].get(signals) == SUCCESS) {
        if (const auto p99 = number_field(signals, "p99_net_ns"))
            text += fmt::format(": p99 network latency {}", duration_text(*p99));
        if (const auto base = number_field(signals, "baseline_net_ns"))
            text += fmt::format(" (baseline {})", duration_text(*base));
        if (const auto cnps = uint_field(signals, "cnps"); cnps && *cnps)
            text += fmt::format(", {} CNP{}", *cnps, *cnps == 1 ? "" : "s");
    }
    return text;
}

double episode_weight(element e) {
    double worst = -1;
    for (element v : list(e, "victims"))
        if (const auto a = number_field(v, "added_net_ns_mean")) worst = std::max(worst, *a);
    if (worst >= 0) return worst;
    element signals;
    if (e["signals"].get(signals) == SUCCESS)
        if (const auto p99 = number_field(signals, "p99_net_ns")) return *p99;
    return 0;
}

}  // namespace insert::correlate::report
