#include "correlator/report/chart_data.hpp"

#include <algorithm>

#include "correlator/report/json_fields.hpp"
#include "correlator/usecases/security_rules.hpp"
#include "dataplane/common/json_line.hpp"

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

double seconds(int64_t t_ns, int64_t origin_ns) {
    return ns_between(origin_ns, t_ns, 1e9);
}

double micros(int64_t ns) {
    return static_cast<double>(ns) / 1e3;
}

void add_cdf(JsonLine& out, const ReportData& d, ChartData& result) {
    out.array("cdf");
    const std::vector<AppCdf> apps = d.cdf.charts(d.limits.cdf_charts, d.limits.cdf_points);
    for (std::size_t i = 0; i < apps.size(); ++i) {
        const AppCdf& app = apps[i];
        const std::string id = "chart-cdf-" + std::to_string(i);
        out.item_object().s("id", id).s("label", app.label).u("messages", app.messages);
        out.u("without_parts", app.without_parts).array("points");
        for (const CdfPoint& p : app.points) {
            out.item_array().item_fixed(p.rank_pct, 4);
            for (const int64_t part :
                 {p.sample.host_ns, p.sample.net_ns, p.sample.completion_ns, p.sample.total_ns})
                out.item_fixed(micros(part), 3);
            out.end_array();
        }
        out.end_array().end_object();
        result.charts.emplace_back(id, 3 * app.points.size());  // three stacked parts
    }
    out.end_array();
}

void add_net(JsonLine& out, const ReportData& d, ChartData& result) {
    const std::vector<Series> series = d.net.series();
    out.object("net").s("id", "chart-net");
    out.fixed("bin_ms", static_cast<double>(d.net.bin_ns()) / 1e6, 3).array("series");
    std::size_t points = 0;
    for (const Series& s : series) {
        out.item_object().s("label", s.label).u("msgs", s.msgs).array("points");
        for (const SeriesPoint& p : s.points)  // plotted at the bin's middle
            out.item_array()
                .item_fixed(
                    seconds(p.t_start_ns, d.t_min_ns) + static_cast<double>(d.net.bin_ns()) / 2e9,
                    6)
                .item_fixed(micros(p.p99_ns), 3)
                .item_u(p.msgs)
                .end_array();
        out.end_array().end_object();
        points += s.points.size();
    }
    out.end_array().array("episodes");
    for (const EpisodeSpan& e : d.spans)
        out.item_array()
            .item_fixed(seconds(e.t_start_ns, d.t_min_ns), 6)
            .item_fixed(seconds(e.t_end_ns, d.t_min_ns), 6)
            .item_s(e.node)
            .end_array();
    out.end_array().end_object();
    if (points) result.charts.emplace_back("chart-net", points);
}

void add_alerts(JsonLine& out, const ReportData& d, ChartData& result) {
    std::vector<std::string> kinds = known_alert_kinds();
    for (const AlertPoint& a : d.alert_points)
        if (std::find(kinds.begin(), kinds.end(), a.kind) == kinds.end()) kinds.push_back(a.kind);
    out.object("alerts").s("id", "chart-alerts").array("kinds");
    for (const std::string& kind : kinds) out.item_s(kind);
    out.end_array().array("points");
    for (const AlertPoint& a : d.alert_points) {
        const auto kind = std::find(kinds.begin(), kinds.end(), a.kind) - kinds.begin();
        out.item_array()
            .item_fixed(seconds(a.t_ns, d.t_min_ns), 6)
            .item_u(static_cast<uint64_t>(kind))
            .item_u(a.count)
            .item_fixed(seconds(a.t_last_ns, d.t_min_ns), 6)
            .item_s(a.label)
            .end_array();
    }
    out.end_array().end_object();
    if (!d.alert_points.empty()) result.charts.emplace_back("chart-alerts", d.alert_points.size());
}

}  // namespace

ChartData make_chart_data(const ReportData& d) {
    ChartData result;
    JsonLine out(result.json, JsonEscape::script);
    out.i("t0_ns", d.have_time ? d.t_min_ns : 0);
    if (d.have_time)
        out.fixed("t_end_s", seconds(d.t_max_ns, d.t_min_ns), 6);
    else
        out.u("t_end_s", 1);
    add_cdf(out, d, result);
    add_net(out, d, result);
    add_alerts(out, d, result);
    out.close();
    return result;
}

}  // namespace insert::correlate::report
