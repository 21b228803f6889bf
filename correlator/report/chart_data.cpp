#include "correlator/report/chart_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "correlator/report/alert_axis.hpp"
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

// The alert timeline: a lane per kind present, the time axis of alert_axis.hpp (the
// alerts' own span, broken between bursts far apart), and up to kAlertsOneByOne alerts
// each a point; above that, per kind the alerts of each of kAlertBins bins of the axis, one
// point each: thousands of alerts stay readable.
constexpr std::size_t kAlertsOneByOne = 300;
constexpr std::size_t kAlertBins = 120;

void add_alerts(JsonLine& out, const ReportData& d, ChartData& result) {
    const std::vector<AlertPoint>& alerts = d.alert_points;
    std::map<std::string, uint64_t> per_kind;
    for (const AlertPoint& a : alerts) ++per_kind[a.kind];
    std::vector<std::string> kinds;
    for (const std::string& kind : known_alert_kinds())
        if (per_kind.count(kind)) kinds.push_back(kind);
    for (const auto& [kind, n] : per_kind)
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
    const auto lane = [&](const std::string& kind) {
        return static_cast<uint64_t>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
    };

    std::vector<std::pair<double, double>> times;
    double first_s = 0, end_s = 0;
    for (const AlertPoint& a : alerts) {
        times.emplace_back(seconds(a.t_ns, d.t_min_ns), seconds(a.t_last_ns, d.t_min_ns));
        first_s = times.size() == 1 ? times.back().first : std::min(first_s, times.back().first);
        end_s = times.size() == 1 ? times.back().second : std::max(end_s, times.back().second);
    }
    const double run_s = seconds(d.t_max_ns, d.t_min_ns);
    const AlertAxis axis(times, run_s);
    const bool binned = alerts.size() > kAlertsOneByOne;
    const uint64_t total = alerts.size() + d.alert_points_dropped;

    std::string title =
        fmt::format("{} alert{} between {:.6f} s and {:.6f} s (the records span 0 to {:.3f} s)",
                    total, total == 1 ? "" : "s", first_s, end_s, run_s);
    if (axis.segments().size() > 1) title += "; the time axis skips the gaps marked";
    if (d.alert_points_dropped) title += fmt::format("; the first {} drawn", alerts.size());
    if (binned) title += "; a point: one kind's alerts close in time";

    out.object("alerts").s("id", "chart-alerts").s("title", title);
    out.fixed("width", AlertAxis::kWidth, 0).array("segments");
    for (const AxisSegment& s : axis.segments())
        out.item_array()
            .item_fixed(s.from_s, 6)
            .item_fixed(s.to_s, 6)
            .item_fixed(s.x0, 3)
            .item_fixed(s.x1, 3)
            .item_u(s.alerts)
            .end_array();
    out.end_array().array("kinds");
    for (const std::string& kind : kinds) out.item_s(kind);
    out.end_array().array("counts");
    for (const std::string& kind : kinds) out.item_u(per_kind[kind]);
    // A point: [x, lane, size (offences, or alerts in its bin), x of its last offence,
    // tooltip]; x on the axis (display units), the times are in the tooltip.
    out.end_array().array("points");
    std::size_t points = 0;
    if (!binned) {
        for (std::size_t i = 0; i < alerts.size(); ++i) {
            const AlertPoint& a = alerts[i];
            out.item_array()
                .item_fixed(axis.x(times[i].first), 3)
                .item_u(lane(a.kind))
                .item_u(a.count)
                .item_fixed(axis.x(times[i].second), 3)
                .item_s(
                    fmt::format("{} x{} at {:.6f} s: {}", a.kind, a.count, times[i].first, a.label))
                .end_array();
            ++points;
        }
    } else {
        struct Bin {
            uint64_t alerts = 0, offences = 0;
            double first_s = 0, last_s = 0;
        };
        std::map<std::pair<uint64_t, uint64_t>, Bin> bins;  // (lane, bin)
        const double bin_width = AlertAxis::kWidth / kAlertBins;
        for (std::size_t i = 0; i < alerts.size(); ++i) {
            const double x = axis.x(times[i].first);
            const auto bin = static_cast<uint64_t>(std::min(x / bin_width, double{kAlertBins - 1}));
            Bin& b = bins[{lane(alerts[i].kind), bin}];
            b.first_s = b.alerts ? std::min(b.first_s, times[i].first) : times[i].first;
            b.last_s = b.alerts ? std::max(b.last_s, times[i].first) : times[i].first;
            ++b.alerts;
            b.offences += alerts[i].count;
        }
        for (const auto& [at, b] : bins) {
            const double x = (static_cast<double>(at.second) + 0.5) * bin_width;
            out.item_array()
                .item_fixed(x, 3)
                .item_u(at.first)
                .item_u(b.alerts)
                .item_fixed(x, 3)
                .item_s(fmt::format("{} x{} ({} offences) from {:.6f} s to {:.6f} s",
                                    kinds[at.first], b.alerts, b.offences, b.first_s, b.last_s))
                .end_array();
            ++points;
        }
    }
    out.end_array().end_object();
    if (points) result.charts.emplace_back("chart-alerts", points);
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
