#include "correlator/report/html_page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <set>

#include "correlator/report/chart_data.hpp"
#include "correlator/report/html_tables.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/json_fields.hpp"
#include "correlator/report/page_assets.hpp"
#include "correlator/report/verdict.hpp"

namespace insert::correlate::report {

namespace {

std::string utc(int64_t ns) {
    const time_t s = static_cast<time_t>(ns / 1'000'000'000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
    return std::string(text, n) + fmt::format(".{:03d} UTC", (ns % 1'000'000'000) / 1'000'000);
}

void section(std::string& out, std::string_view id, std::string_view title,
             std::string_view explanation) {
    out += fmt::format("<h2 id=\"{}\">", id);
    append_html(out, title);
    out += "</h2><p class=\"note\">";
    append_html(out, explanation);
    out += "</p>";
}

void canvas(std::string& out, const std::string& id, bool wide) {
    out += fmt::format("<div class=\"chart{}\"><canvas id=\"{}\"></canvas></div>",
                       wide ? " wide" : "", id);
}

}  // namespace

std::string render_page(const ReportData& d, std::string_view chart_library,
                        std::string_view source, double reload_s) {
    const ChartData charts = make_chart_data(d);
    std::string out;
    out.reserve(chart_library.size() + charts.json.size() + 65536);
    out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
    // Nothing on this page may load from anywhere: the policy makes that a rule.
    out +=
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">";
    out += "<title>INSERT report: ";
    append_html(out, source);
    out += "</title><style>";
    out += kPageStyle;
    out += "</style><script>";
    out += kErrorCaptureScript;
    out += "</script>";
    if (reload_s > 0)  // a live page: the server makes it anew every interval
        out += fmt::format(
            "<script>if (location.hash !== \"#pause\") setTimeout(function () {{ "
            "location.reload(); }}, {});</script>",
            static_cast<long>(reload_s * 1000));
    out += "<script>\n";
    out += chart_library;
    out += "\n</script></head>\n";
    out +=
        fmt::format("<body data-charts-expected=\"{}\" data-chart-list=\"", charts.charts.size());
    for (std::size_t i = 0; i < charts.charts.size(); ++i)
        out +=
            fmt::format("{}{}={}", i ? " " : "", charts.charts[i].first, charts.charts[i].second);
    out += "\">\n<h1>INSERT end-to-end report</h1>\n";
    // What happened comes first: the first screen answers; charts, tables and counters follow.
    append_verdict(out, d, reload_s > 0);

    out += "<p class=\"note\" id=\"about\">";
    out += fmt::format("{} records", d.lines - d.unreadable);
    out += " from ";
    append_html(out, source);
    if (d.have_time)
        out += fmt::format(
            "; times are seconds since {} ({} ns, the earliest charted record), "
            "to {:.3f} s",
            utc(d.t_min_ns), d.t_min_ns, ns_between(d.t_min_ns, d.t_max_ns, 1e9));
    if (d.unreadable)
        out += fmt::format("; {} lines were not insert-correlate records", d.unreadable);
    out += ".";
    if (reload_s > 0)
        out += fmt::format(
            " Live: the records written so far, made anew every {:g} s; this page reloads "
            "itself as often (add #pause to its address to stop it).",
            reload_s);
    out += "</p>\n";
    out +=
        "<nav class=\"sections\">Below: <a href=\"#latency\">latency per application</a> · "
        "<a href=\"#timelines\">timelines</a> · <a href=\"#alerts\">alerts</a> · "
        "<a href=\"#episodes\">congestion episodes</a> · <a href=\"#apps\">applications</a> · "
        "<a href=\"#clocks\">host clocks</a> · <a href=\"#pairs\">pairs</a> · "
        "<a href=\"#summary\">counters</a></nav>\n";

    section(out, "latency", "Latency per application",
            "Each application's messages sorted by total latency (post to completion poll); at "
            "each percentile rank the message there, split into host (post to first packet at "
            "the observer), network (first packet to acknowledgement) and completion "
            "(acknowledgement to poll), stacked: the top line is the total latency CDF.");
    const std::vector<AppCdf> cdfs = d.cdf.charts(d.limits.cdf_charts, d.limits.cdf_points);
    if (cdfs.empty()) out += "<p class=\"note\">No e2e record with all its latency parts.</p>";
    out += "<div class=\"charts\">";
    for (std::size_t i = 0; i < cdfs.size(); ++i)
        canvas(out, "chart-cdf-" + std::to_string(i), false);
    out += "</div>";

    out += "<h2 id=\"timelines\">Timelines</h2>";
    out += "<h3 id=\"alert-timeline\">Alerts over time</h3><p class=\"note\">";
    append_html(out,
                "A lane per alert kind (docs/correlation.md 8); the time axis spans the alerts, "
                "not the whole run. A point is an alert, larger for more offences, with a line "
                "to its last offence; with many alerts, one kind's alerts in a time bin.");
    out += "</p>";
    if (d.alert_points.empty()) {
        out += "<p class=\"note\">No alerts.</p>";
    } else {
        std::set<std::string_view> lanes;
        for (const AlertPoint& a : d.alert_points) lanes.insert(a.kind);
        out += fmt::format(
            "<div class=\"chart wide\" style=\"height: {}px\"><canvas "
            "id=\"chart-alerts\"></canvas></div>",
            std::max<std::size_t>(200, 110 + 32 * lanes.size()));
    }
    out += "<h3 id=\"congestion\">Network latency over time</h3><p class=\"note\">";
    append_html(out,
                "p99 of the network latency of the messages each tenant (cgroup) sent, per time "
                "bin; shaded: the congestion episodes (docs/correlation.md 9) with their node.");
    out += "</p>";
    if (charts.charts.end() == std::find_if(charts.charts.begin(), charts.charts.end(),
                                            [](const auto& c) { return c.first == "chart-net"; }))
        out += "<p class=\"note\">No e2e record with a network latency.</p>";
    else
        canvas(out, "chart-net", true);

    section(out, "alerts", "Alerts",
            "Every alert record: victim, source (claimed: only claimed, possibly spoofed) and "
            "evidence.");
    append_alert_table(out, d);
    section(out, "episodes", "Congestion episodes",
            "Every congestion record: its signals, the contributors by their share of the "
            "episode's bytes and the victims by the network latency added per message.");
    append_congestion_table(out, d);
    section(out, "apps", "Applications", "The final app record of each application.");
    append_app_table(out, d);
    section(out, "clocks", "Host clocks",
            "Each host's offset from the observer's clock and its bounds (SPEC 10).");
    append_clock_table(out, d);
    section(out, "pairs", "Pairs by host",
            "Host QPs whose peer the dataplane did not pair as the host did.");
    append_pair_table(out, d);
    section(out, "summary", "Counters", "The run's summary record (docs/correlation.md 6).");
    append_summary_table(out, d);

    out += "\n<script type=\"application/json\" id=\"insert-report-data\">";
    out += charts.json;
    out += "</script>\n<script>";
    out += kDrawChartsScript;
    out += "</script>\n</body></html>\n";
    return out;
}

}  // namespace insert::correlate::report
