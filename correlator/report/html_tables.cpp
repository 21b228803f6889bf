#include "correlator/report/html_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "correlator/report/congestion_text.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"

namespace insert::correlate::report {

using simdjson::SUCCESS;
using simdjson::dom::element;
using simdjson::dom::object;

namespace {

// Parses a kept line (it parsed once already, so this does not fail for a kept line).
bool parse(simdjson::dom::parser& parser, const std::string& line, element& out) {
    return parser.parse(line).get(out) == SUCCESS;
}

void cell(std::string& out, std::string_view text) {
    out += "<td>";
    append_html(out, text);
    out += "</td>";
}

void header(std::string& out, std::initializer_list<std::string_view> names) {
    out += "<thead><tr>";
    for (std::string_view n : names) {
        out += "<th>";
        append_html(out, n);
        out += "</th>";
    }
    out += "</tr></thead><tbody>";
}

std::string us(std::optional<int64_t> ns) {
    return ns ? fmt::format("{:.1f}", static_cast<double>(*ns) / 1e3) : std::string("-");
}

// "p50 / p99" of an app record's part, in microseconds.
std::string part(element r, const char* name) {
    element p;
    if (r[name].get(p) != SUCCESS) return "-";
    return us(int_field(p, "p50")) + " / " + us(int_field(p, "p99"));
}

uint64_t sum_of(element r, const char* name) {
    object o;
    uint64_t total = 0;
    if (r[name].get(o) != SUCCESS) return 0;
    for (auto field : o) {
        uint64_t v = 0;
        if (field.value.get(v) == SUCCESS) total += v;
    }
    return total;
}

// comm[pid] ip QP n (cgroup c) @host, from an alert's victim or source object.
std::string owner(element r, const char* name) {
    element o;
    if (r[name].get(o) != SUCCESS) return "-";
    std::string text = field_text(o, "comm") + "[" + field_text(o, "pid") + "] " +
                       field_text(o, "ip") + " QP " + qpn_field_text(o);
    if (int_field(o, "cgroup")) text += " cgroup " + field_text(o, "cgroup");
    const auto host = text_field(o, "host");
    if (host) text += " @" + std::string(*host);
    return text;
}

// An alert's source, "claimed ... (possibly spoofed)" unless its own trace vouched for it.
std::string source_text(element r) {
    bool only_claimed = false;
    if (r["source"]["claimed"].get(only_claimed) != SUCCESS) only_claimed = false;
    const std::string text = owner(r, "source");
    return only_claimed ? "claimed " + text + " (possibly spoofed)" : text;
}

// key=value pairs of an object, values compact.
std::string pairs_text(element r, const char* name) {
    object o;
    if (r[name].get(o) != SUCCESS) return "-";
    std::string text;
    for (auto field : o) {
        if (!text.empty()) text += ", ";
        text += std::string(field.key) + "=" + cell_text(field.value);
    }
    return text;
}

void flatten(const std::string& prefix, element v,
             std::vector<std::pair<std::string, std::string>>& rows) {
    object o;
    if (v.get(o) == SUCCESS) {
        for (auto field : o) {
            const std::string key =
                prefix.empty() ? std::string(field.key) : prefix + "." + std::string(field.key);
            if (key == "type") continue;
            flatten(key, field.value, rows);
        }
        return;
    }
    rows.emplace_back(prefix, cell_text(v));
}

// A table of records with their fields as columns (in first-seen order).
void generic_table(std::string& out, const std::vector<std::string>& lines, const char* id) {
    simdjson::dom::parser parser;
    std::vector<std::string> columns;
    std::vector<std::vector<std::pair<std::string, std::string>>> rows;
    for (const std::string& line : lines) {
        element r;
        if (!parse(parser, line, r)) continue;
        rows.emplace_back();
        object o;
        if (r.get(o) != SUCCESS) continue;
        for (auto field : o) {
            const std::string key(field.key);
            if (key == "type") continue;
            if (std::find(columns.begin(), columns.end(), key) == columns.end())
                columns.push_back(key);
            rows.back().emplace_back(key, cell_text(field.value));
        }
    }
    out += fmt::format("<table id=\"{}\"><thead><tr>", id);
    for (const std::string& c : columns) {
        out += "<th>";
        append_html(out, c);
        out += "</th>";
    }
    out += "</tr></thead><tbody>";
    for (const auto& row : rows) {
        out += "<tr>";
        for (const std::string& c : columns) {
            const auto it =
                std::find_if(row.begin(), row.end(), [&](const auto& kv) { return kv.first == c; });
            cell(out, it == row.end() ? std::string("-") : it->second);
        }
        out += "</tr>";
    }
    out += "</tbody></table>";
}

}  // namespace

std::string since_origin(const ReportData& d, std::optional<int64_t> t_ns) {
    if (!t_ns) return "-";
    return fmt::format("{:.6f}", ns_between(d.t_min_ns, *t_ns, 1e9));
}

void append_summary_table(std::string& out, const ReportData& d) {
    simdjson::dom::parser parser;
    element r;
    if (d.summary.empty() || !parse(parser, d.summary, r)) {
        out += "<p class=\"note\">No summary record (the run did not finish?).</p>";
        return;
    }
    std::vector<std::pair<std::string, std::string>> rows;
    flatten("", r, rows);
    out += "<table id=\"summary-table\" class=\"kv\"><tbody>";
    for (const auto& [k, v] : rows) {
        out += "<tr><th>";
        append_html(out, k);
        out += "</th>";
        cell(out, v);
        out += "</tr>";
    }
    out += "</tbody></table>";
}

void append_clock_table(std::string& out, const ReportData& d) {
    if (d.clocks.empty()) {
        out += "<p class=\"note\">No clock records.</p>";
        return;
    }
    generic_table(out, d.clocks, "clock-table");
}

void append_pair_table(std::string& out, const ReportData& d) {
    const auto total = d.by_type.count("pair") ? d.by_type.at("pair") : 0;
    if (total == 0) {
        out +=
            "<p class=\"note\">No pair records: the dataplane paired every traced QP as "
            "its host did.</p>";
        return;
    }
    if (total > d.pairs.size())
        out += fmt::format("<p class=\"note\">The first {} of {} pair records.</p>", d.pairs.size(),
                           total);
    generic_table(out, d.pairs, "pair-table");
}

void append_app_table(std::string& out, const ReportData& d, std::size_t max_rows) {
    if (d.apps.empty()) {
        out += "<p class=\"note\">No app records.</p>";
        return;
    }
    simdjson::dom::parser parser;
    std::vector<std::pair<uint64_t, const std::string*>> order;
    for (const auto& [key, app] : d.apps) {
        element r;
        if (parse(parser, app.line, r)) order.emplace_back(sum_of(r, "msgs"), &app.line);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    if (order.size() > max_rows || d.apps_dropped)
        out += fmt::format(
            "<p class=\"note\">The {} applications with the most messages of {} (see the app "
            "records).</p>",
            std::min(order.size(), max_rows), order.size() + d.apps_dropped);
    out += "<table id=\"app-table\">";
    header(out, {"host", "ip", "pid", "comm", "cgroup", "QPs", "msgs", "bytes", "host us p50 / p99",
                 "net us p50 / p99", "completion us p50 / p99", "total us p50 / p99", "retx pkts",
                 "NAKs", "CNPs", "ECN-CE", "ECN-CE caused", "unmatched WRs"});
    for (std::size_t i = 0; i < order.size() && i < max_rows; ++i) {
        element r;
        if (!parse(parser, *order[i].second, r)) continue;
        out += "<tr>";
        for (const char* f : {"host", "ip", "pid", "comm", "cgroup", "qps"})
            cell(out, field_text(r, f));
        cell(out, std::to_string(order[i].first));
        cell(out, std::to_string(sum_of(r, "bytes")));
        for (const char* p : {"host_ns", "net_ns", "completion_ns", "total_ns"})
            cell(out, part(r, p));
        for (const char* f :
             {"retx_pkts", "naks", "cnps", "ecn_ce", "ecn_ce_caused", "unmatched_wr"})
            cell(out, field_text(r, f));
        out += "</tr>";
    }
    out += "</tbody></table>";
}

void append_alert_table(std::string& out, const ReportData& d) {
    const auto total = d.by_type.count("alert") ? d.by_type.at("alert") : 0;
    if (total == 0) {
        out += "<p class=\"note\">No alerts.</p>";
        return;
    }
    if (total > d.alerts.size())
        out +=
            fmt::format("<p class=\"note\">The first {} of {} alerts.</p>", d.alerts.size(), total);
    simdjson::dom::parser parser;
    out += "<table id=\"alert-table\">";
    header(out, {"t (s)", "last (s)", "kind", "severity", "count", "victim", "source", "evidence"});
    for (const std::string& line : d.alerts) {
        element r;
        if (!parse(parser, line, r)) continue;
        const std::string severity = field_text(r, "severity");
        out += "<tr class=\"";
        append_html(out, severity);
        out += "\">";
        cell(out, since_origin(d, int_field(r, "t_ns")));
        cell(out, since_origin(d, int_field(r, "t_last_ns")));
        cell(out, field_text(r, "kind"));
        cell(out, severity);
        cell(out, field_text(r, "count"));
        cell(out, owner(r, "victim"));
        cell(out, source_text(r));
        cell(out, pairs_text(r, "evidence"));
        out += "</tr>";
    }
    out += "</tbody></table>";
}

void append_congestion_table(std::string& out, const ReportData& d) {
    const auto total = d.by_type.count("congestion") ? d.by_type.at("congestion") : 0;
    if (total == 0) {
        out += "<p class=\"note\">No congestion episodes.</p>";
        return;
    }
    if (total > d.episodes.size())
        out += fmt::format("<p class=\"note\">The first {} of {} episodes.</p>", d.episodes.size(),
                           total);
    simdjson::dom::parser parser;
    out += "<table id=\"congestion-table\">";
    header(out, {"start (s)", "length (ms)", "node", "addresses", "p99 net us", "baseline net us",
                 "msgs", "CNPs", "ECN-CE", "retx pkts", "NAKs", "contributors (share of the bytes)",
                 "victims (network latency added per message)"});
    for (const std::string& line : d.episodes) {
        element r, where, signals;
        if (!parse(parser, line, r)) continue;
        const auto t0 = int_field(r, "t_start_ns");
        const auto t1 = int_field(r, "t_end_ns");
        const bool has_where = r["where"].get(where) == SUCCESS;
        const bool has_signals = r["signals"].get(signals) == SUCCESS;
        out += "<tr>";
        cell(out, since_origin(d, t0));
        cell(out, t0 && t1 ? fmt::format("{:.1f}", ns_between(*t0, *t1, 1e6)) : "-");
        cell(out, has_where ? field_text(where, "node") : "-");
        cell(out, has_where ? field_text(where, "dst_ips") : "-");
        cell(out, has_signals ? us(int_field(signals, "p99_net_ns")) : "-");
        cell(out, has_signals ? us(int_field(signals, "baseline_net_ns")) : "-");
        for (const char* f : {"msgs", "cnps", "ecn_ce", "retx_pkts", "naks"})
            cell(out, has_signals ? field_text(signals, f) : "-");
        // Per message and by byte share (congestion_text.hpp); never a sum over messages.
        out += "<td>";
        const auto contributors = episode_contributors(r);
        for (std::size_t k = 0; k < contributors.size(); ++k) {
            if (k) out += "<br>";
            append_contributor(out, contributors[k], r);
        }
        out += contributors.empty() ? "-</td><td>" : "</td><td>";
        const auto victims = episode_victims(r);
        for (std::size_t k = 0; k < victims.size(); ++k) {
            if (k) out += "<br>";
            append_victim(out, victims[k], r);
        }
        out += victims.empty() ? "-</td>" : "</td>";
        out += "</tr>";
    }
    out += "</tbody></table>";
}

}  // namespace insert::correlate::report
