#include "correlator/report/report_data.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"

namespace insert::correlate::report {

using simdjson::SUCCESS;
using simdjson::dom::element;

std::string app_key(element r, const char* ip_field) {
    std::string key;
    for (const char* f : {"host", ip_field, "pid", "comm", "cgroup"}) {
        key += field_text(r, f);
        key += '\x1f';
    }
    return key;
}

std::string app_label(element r, const char* ip_field) {
    // As the verdict names applications: comm[pid]@host ip.
    return fmt::format("{}[{}]@{} {}", field_text(r, "comm"), field_text(r, "pid"),
                       field_text(r, "host"), field_text(r, ip_field));
}

ReportData::ReportData(const ReportLimits& l)
    : limits(l),
      cdf(l.cdf_apps, l.cdf_reservoir),
      net(l.series, l.bins),
      alert_groups(l.alert_groups) {}

void ReportData::note_time(int64_t t_ns) {
    if (!have_time || t_ns < t_min_ns) t_min_ns = t_ns;
    if (!have_time || t_ns > t_max_ns) t_max_ns = t_ns;
    have_time = true;
}

void ReportData::add(std::string_view line) {
    ++lines;
    element record;
    auto parsed = parser_.parse(line.data(), line.size(), true).get(record);
    std::string repaired;
    if (parsed == simdjson::UTF8_ERROR) {
        // The correlator copies comm bytes as they are; the kernel cuts comm at 15 bytes,
        // possibly inside a character. Show the rest of the record.
        repaired = valid_utf8(line);
        line = repaired;
        parsed = parser_.parse(line.data(), line.size(), true).get(record);
    }
    if (parsed != SUCCESS || !record.is_object() || !add_record(record, line)) ++unreadable;
}

bool ReportData::add_record(element r, std::string_view line) {
    const auto type = text_field(r, "type");
    if (!type) return false;
    if (*type == "e2e") {
        add_e2e(r);
    } else if (*type == "app") {
        add_app(r, line);
    } else if (*type == "alert") {
        add_alert(r, line);
    } else if (*type == "congestion") {
        add_congestion(r, line);
    } else if (*type == "pair") {
        if (pairs.size() < limits.pairs) pairs.emplace_back(line);
    } else if (*type == "cgroup") {
        const auto id = uint_field(r, "id");
        const auto path = text_field(r, "path");
        if (id && path) net.name(*id, std::string(*path));
    } else if (*type == "clock") {
        if (clocks.size() < limits.clocks) clocks.emplace_back(line);
    } else if (*type == "summary" && uint_field(r, "e2e")) {
        // insert-correlate's summary (insert-dp and insert-trace write summaries of their
        // own, without an e2e count: not this page's records).
        summary = std::string(line);
    } else {
        return false;
    }
    ++by_type[std::string(*type)];
    return true;
}

void ReportData::add_e2e(element r) {
    const auto t_first = int_field(r, "t_first_ns");
    const auto net_ns = int_field(r, "net_ns");
    if (t_first) note_time(*t_first);
    if (t_first && net_ns)
        net.add(uint_field(r, "cgroup").value_or(0),
                std::string(text_field(r, "comm").value_or("")), *t_first, *net_ns);
    else
        ++e2e_without_net;
    const auto total = int_field(r, "total_ns");
    const auto host = int_field(r, "host_ns");
    const auto completion = int_field(r, "completion_ns");
    const bool complete = total && host && net_ns && completion;
    LatencySample s;
    if (complete) s = {*total, *host, *net_ns, *completion};
    cdf.add(app_key(r, "src_ip"), app_label(r, "src_ip"), complete, s);
}

void ReportData::add_app(element r, std::string_view line) {
    std::string key = app_key(r, "ip");
    // Its tenant's path names the tenant's series as a cgroup record would: the bus's
    // output stream carries no cgroup records (the merged view, docs/scale-out.md).
    const auto cgroup = uint_field(r, "cgroup");
    const auto path = text_field(r, "cgroup_path");
    if (cgroup && path) net.name(*cgroup, std::string(*path));
    bool final = false;
    if (r["final"].get(final) != SUCCESS) final = false;
    const auto it = apps.find(key);
    if (it == apps.end()) {
        if (apps.size() >= limits.apps) {
            ++apps_dropped;
            return;
        }
        apps.emplace(std::move(key), AppLine{final, std::string(line)});
    } else if (final || !it->second.final) {
        it->second = {final, std::string(line)};  // cumulative: the latest, a final one last
    }
}

void ReportData::add_alert(element r, std::string_view line) {
    if (alerts.size() < limits.alert_rows) alerts.emplace_back(line);
    alert_groups.add(r);
    const auto t = int_field(r, "t_ns");
    if (!t) return;
    note_time(*t);
    const int64_t t_last = std::max(*t, int_field(r, "t_last_ns").value_or(*t));
    note_time(t_last);
    if (alert_points.size() >= limits.alert_points) {
        ++alert_points_dropped;
        return;
    }
    element victim, source;
    std::string label;
    if (r["victim"].get(victim) == SUCCESS)
        label += fmt::format("victim {} QP {}", party_name(victim), qpn_field_text(victim));
    if (r["source"].get(source) == SUCCESS) {
        bool claimed = false;
        if (source["claimed"].get(claimed) != SUCCESS) claimed = false;
        label += claimed ? fmt::format("; claimed source {} (possibly spoofed)", party_name(source))
                         : fmt::format("; source {}", party_name(source));
    }
    alert_points.push_back({*t, t_last, std::string(text_field(r, "kind").value_or("?")),
                            uint_field(r, "count").value_or(1), std::move(label)});
}

void ReportData::add_congestion(element r, std::string_view line) {
    if (episodes.size() < limits.episodes) episodes.emplace_back(line);
    const auto t0 = int_field(r, "t_start_ns");
    const auto t1 = int_field(r, "t_end_ns");
    if (!t0 || !t1) return;
    note_time(*t0);
    note_time(*t1);
    element where;
    std::string node;
    if (r["where"].get(where) == SUCCESS) node = field_text(where, "node");
    if (spans.size() < limits.episodes) spans.push_back({*t0, *t1, std::move(node)});
}

}  // namespace insert::correlate::report
