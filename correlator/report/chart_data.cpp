#include "correlator/report/chart_data.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"
#include "correlator/usecases/security_rules.hpp"

namespace insert::correlate::report {

const std::vector<std::string>& known_alert_kinds() {
    static const std::vector<std::string> kinds = [] {
        std::vector<std::string> names;
        for (const SecurityRule& rule : security_rules()) names.emplace_back(rule.name);
        return names;
    }();
    return kinds;
}

namespace {

std::string seconds(int64_t t_ns, int64_t origin_ns) {
    return fmt::format("{:.6f}", ns_between(origin_ns, t_ns, 1e9));
}

std::string micros(int64_t ns) {
    return fmt::format("{:.3f}", static_cast<double>(ns) / 1e3);
}

void append_cdf(std::string& out, const ReportData& d, ChartData& result) {
    out += "\"cdf\":[";
    const std::vector<AppCdf> apps = d.cdf.charts(d.limits.cdf_charts, d.limits.cdf_points);
    for (std::size_t i = 0; i < apps.size(); ++i) {
        const AppCdf& app = apps[i];
        const std::string id = "chart-cdf-" + std::to_string(i);
        if (i) out += ',';
        out += "{\"id\":\"" + id + "\",\"label\":";
        append_script_json_string(out, app.label);
        out += fmt::format(",\"messages\":{},\"without_parts\":{},\"points\":[", app.messages,
                           app.without_parts);
        for (std::size_t k = 0; k < app.points.size(); ++k) {
            const CdfPoint& p = app.points[k];
            out += fmt::format("{}[{:.4f},{},{},{},{}]", k ? "," : "", p.rank_pct,
                               micros(p.sample.host_ns), micros(p.sample.net_ns),
                               micros(p.sample.completion_ns), micros(p.sample.total_ns));
        }
        out += "]}";
        result.charts.emplace_back(id, 3 * app.points.size());  // three stacked parts
    }
    out += ']';
}

void append_net(std::string& out, const ReportData& d, ChartData& result) {
    const std::vector<Series> series = d.net.series();
    out += fmt::format("\"net\":{{\"id\":\"chart-net\",\"bin_ms\":{:.3f},\"series\":[",
                       static_cast<double>(d.net.bin_ns()) / 1e6);
    std::size_t points = 0;
    for (std::size_t s = 0; s < series.size(); ++s) {
        if (s) out += ',';
        out += "{\"label\":";
        append_script_json_string(out, series[s].label);
        out += fmt::format(",\"msgs\":{},\"points\":[", series[s].msgs);
        for (std::size_t k = 0; k < series[s].points.size(); ++k) {
            const SeriesPoint& p = series[s].points[k];
            // Plotted at the bin's middle.
            out += fmt::format("{}[{},{},{}]", k ? "," : "",
                               fmt::format("{:.6f}", ns_between(d.t_min_ns, p.t_start_ns, 1e9) +
                                                         static_cast<double>(d.net.bin_ns()) / 2e9),
                               micros(p.p99_ns), p.msgs);
        }
        out += "]}";
        points += series[s].points.size();
    }
    out += "],\"episodes\":[";
    for (std::size_t i = 0; i < d.spans.size(); ++i) {
        const EpisodeSpan& e = d.spans[i];
        out += fmt::format("{}[{},{},", i ? "," : "", seconds(e.t_start_ns, d.t_min_ns),
                           seconds(e.t_end_ns, d.t_min_ns));
        append_script_json_string(out, e.node);
        out += ']';
    }
    out += "]}";
    if (points) result.charts.emplace_back("chart-net", points);
}

void append_alerts(std::string& out, const ReportData& d, ChartData& result) {
    std::vector<std::string> kinds = known_alert_kinds();
    for (const AlertPoint& a : d.alert_points)
        if (std::find(kinds.begin(), kinds.end(), a.kind) == kinds.end()) kinds.push_back(a.kind);
    out += "\"alerts\":{\"id\":\"chart-alerts\",\"kinds\":[";
    for (std::size_t k = 0; k < kinds.size(); ++k) {
        if (k) out += ',';
        append_script_json_string(out, kinds[k]);
    }
    out += "],\"points\":[";
    for (std::size_t i = 0; i < d.alert_points.size(); ++i) {
        const AlertPoint& a = d.alert_points[i];
        const auto kind = std::find(kinds.begin(), kinds.end(), a.kind) - kinds.begin();
        out += fmt::format("{}[{},{},{},{},", i ? "," : "", seconds(a.t_ns, d.t_min_ns), kind,
                           a.count, seconds(a.t_last_ns, d.t_min_ns));
        append_script_json_string(out, a.label);
        out += ']';
    }
    out += "]}";
    if (!d.alert_points.empty()) result.charts.emplace_back("chart-alerts", d.alert_points.size());
}

}  // namespace

ChartData make_chart_data(const ReportData& d) {
    ChartData result;
    std::string& out = result.json;
    out += fmt::format("{{\"t0_ns\":{},\"t_end_s\":{},", d.have_time ? d.t_min_ns : 0,
                       d.have_time ? seconds(d.t_max_ns, d.t_min_ns) : "1");
    append_cdf(out, d, result);
    out += ',';
    append_net(out, d, result);
    out += ',';
    append_alerts(out, d, result);
    out += '}';
    return result;
}

}  // namespace insert::correlate::report
