// The HTML report's parts (correlator/report): escaping of record text, the bounded and
// deterministic latency sample, the time bins, the verdict's alert groups and congestion
// phrasing, the alert timeline's axis, and the page made from records.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "correlator/report/alert_axis.hpp"
#include "correlator/report/alert_groups.hpp"
#include "correlator/report/chart_data.hpp"
#include "correlator/report/congestion_text.hpp"
#include "correlator/report/html_page.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/latency_cdf.hpp"
#include "correlator/report/report_data.hpp"
#include "correlator/report/time_bins.hpp"
#include "correlator/report/verdict.hpp"
#include "dataplane/common/json_line.hpp"

namespace insert::correlate::report {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(HtmlText, escapes_markup_and_script_ends) {
    EXPECT_EQ(html("<svg onload=x()>&\"'"), "&lt;svg onload=x()&gt;&amp;&quot;&#39;");
    std::string js;  // the chart data's strings: the JSON writer's script escaping
    JsonLine(js, JsonEscape::script).s("t", "</script><!--\"\\\n").close();
    EXPECT_EQ(js, R"({"t":"\u003c/script\u003e\u003c!--\"\\\u000a"})");
    EXPECT_EQ(inline_script_text("a</script>b</SCRIPT c<!--d"), "a<\\/script>b<\\/SCRIPT c<\\!--d");
    EXPECT_EQ(inline_script_text("x<y && a</b"), "x<y && a</b");
}

TEST(HtmlText, repairs_cut_utf8) {
    // A comm cut by the kernel in the middle of "é" (C3 A9), and an overlong '/'.
    EXPECT_FALSE(is_valid_utf8("ab\xC3"));
    EXPECT_EQ(valid_utf8("ab\xC3"), "ab\xEF\xBF\xBD");
    EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"));
}

TEST(LatencyCdf, exact_ranks_when_everything_fits) {
    // 1000 messages with total latency 1..1000 (added in reverse): 200 points; point k
    // (1-based) is at rank k/200, nearest rank ceil(k * 1000 / 200) = 5k: total 5k.
    LatencyCdf cdf(4, 1024);
    for (int i = 1000; i >= 1; --i) cdf.add("app", "a[1]", true, {i, 1, i - 2, 1});
    cdf.add("app", "a[1]", false, {});
    const auto charts = cdf.charts(12, 200);
    ASSERT_EQ(charts.size(), 1u);
    EXPECT_EQ(charts[0].messages, 1000u);
    EXPECT_EQ(charts[0].without_parts, 1u);
    ASSERT_EQ(charts[0].points.size(), 200u);
    for (std::size_t k = 1; k <= 200; ++k) {
        EXPECT_EQ(charts[0].points[k - 1].sample.total_ns, static_cast<int64_t>(5 * k));
        EXPECT_DOUBLE_EQ(charts[0].points[k - 1].rank_pct, k / 2.0);
    }
    // Fewer messages than points: one point each.
    LatencyCdf few(4, 1024);
    for (int i = 0; i < 7; ++i) few.add("b", "b", true, {i, 0, i, 0});
    EXPECT_EQ(few.charts(12, 200)[0].points.size(), 7u);
}

TEST(LatencyCdf, bounded_and_deterministic) {
    // 100000 messages into a reservoir of 64: the sample stays at 64, the same on every run,
    // and its median lies near the stream's (uniform 0..99999).
    const auto run = [] {
        LatencyCdf cdf(2, 64);
        for (int64_t i = 0; i < 100000; ++i)
            cdf.add("k", "k", true, {(i * 7919) % 100000, 0, 0, 0});
        return cdf.charts(12, 200)[0];
    };
    const AppCdf a = run(), b = run();
    ASSERT_EQ(a.points.size(), 64u);
    EXPECT_EQ(a.messages, 100000u);
    for (std::size_t k = 0; k < 64; ++k)
        EXPECT_EQ(a.points[k].sample.total_ns, b.points[k].sample.total_ns);
    EXPECT_GT(a.points[31].sample.total_ns, 25000);
    EXPECT_LT(a.points[31].sample.total_ns, 75000);
    // Applications beyond the limit are counted, not sampled; the charted ones are the
    // busiest.
    LatencyCdf limited(2, 8);
    limited.add("x", "x", true, {});
    for (int i = 0; i < 3; ++i) limited.add("y", "y", true, {});
    limited.add("z", "z", true, {});
    EXPECT_EQ(limited.apps_not_sampled(), 1u);
    const auto top = limited.charts(1, 200);
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top[0].key, "y");
}

TEST(TimeBins, histogram_percentile_within_a_sixteenth) {
    LogHistogram h;
    for (int64_t v = 1; v <= 1000; ++v) h.add(v * 1000);
    // p99 = 990000 exactly; the bucket's midpoint is within 1/16 of it.
    EXPECT_NEAR(static_cast<double>(h.percentile(99)), 990000.0, 990000.0 / 16);
    EXPECT_EQ(h.percentile(100), 1000000);
    EXPECT_EQ(h.count(), 1000u);
    LogHistogram small;
    small.add(7);
    EXPECT_EQ(small.percentile(99), 7);
}

TEST(TimeBins, bins_double_to_stay_bounded) {
    // 1000 messages 1 ms apart: 1000 bins of 1 ms > 400, 500 of 2 ms > 400, 250 of 4 ms.
    NetLatencySeries net(2, 400);
    for (int64_t k = 0; k < 1000; ++k) net.add(k % 3 == 0 ? 5 : 6, "c", k * 1'000'000, 1000 + k);
    EXPECT_EQ(net.bin_ns(), 4'000'000);
    const auto series = net.series();
    ASSERT_EQ(series.size(), 2u);
    EXPECT_EQ(series[0].label, "cgroup 5: c");
    EXPECT_EQ(series[0].msgs, 334u);
    EXPECT_EQ(series[1].msgs, 666u);
    EXPECT_EQ(series[0].points.size(), 250u);  // every 4 ms bin holds a k with k % 3 == 0
    EXPECT_EQ(series[1].points.size(), 250u);
    // A third cgroup goes to "other cgroups".
    net.add(9, "z", 0, 1);
    EXPECT_EQ(net.series().back().label, "other cgroups");
}

const char* kE2e =
    R"({"type":"e2e","src_ip":"10.0.0.1","src_qpn":17,"dst_ip":"10.0.0.2","dst_qpn":50,)"
    R"("op":"WRITE","bytes":64,"psn_first":1,"wr_id":1,"pid":100,"comm":"<svg onload=x()>",)"
    R"("cgroup":7,"peer_pid":300,"peer_comm":"server","t_post_ns":1000,"t_first_ns":2000,)"
    R"("t_ack_ns":5000,"t_poll_ns":6000,"host_ns":1000,"net_ns":3000,"completion_ns":1000,)"
    R"("total_ns":5000,"retx_pkts":0,"naks":0,"status":"ok","match":"exact",)"
    R"("host":"</script><b>h</b>"})";

TEST(ReportData, takes_records_and_counts_the_rest) {
    ReportData d;
    d.add(kE2e);
    d.add(R"({"type":"alert","kind":"rkey_unknown","severity":"warning","t_ns":3000,"count":4,)"
          R"("victim":{"ip":"10.0.0.2","qpn":50,"pid":300,"comm":"server","cgroup":9,"host":"hB"},)"
          R"("source":{"ip":"10.0.0.9","qpn":null,"pid":null,"comm":null,"host":null},)"
          R"("evidence":{"op":"WRITE","rkey":99},"t_last_ns":4000})");
    d.add(
        R"({"type":"app","host":"hA","ip":"10.0.0.1","pid":100,"comm":"a","cgroup":7,"final":false})");
    d.add(
        R"({"type":"app","host":"hA","ip":"10.0.0.1","pid":100,"comm":"a","cgroup":7,"final":true})");
    d.add(
        R"({"type":"app","host":"hA","ip":"10.0.0.1","pid":100,"comm":"a","cgroup":7,"final":false})");
    d.add(R"({"type":"summary","e2e":1})");
    d.add("not json");
    d.add(R"({"type":"msg"})");
    d.add("{\"type\":\"e2e\",\"comm\":\"ab\xC3\",\"pid\":1,\"t_first_ns\":10}");  // cut UTF-8
    EXPECT_EQ(d.lines, 9u);
    EXPECT_EQ(d.unreadable, 2u);
    EXPECT_EQ(d.by_type.at("e2e"), 2u);
    ASSERT_EQ(d.apps.size(), 1u);
    EXPECT_TRUE(d.apps.begin()->second.final);  // a final record is not replaced by an interval one
    ASSERT_EQ(d.alert_points.size(), 1u);
    EXPECT_EQ(d.alert_points[0].count, 4u);
    EXPECT_EQ(d.t_min_ns, 10);
    EXPECT_EQ(d.t_max_ns, 4000);
    EXPECT_EQ(d.e2e_without_net, 1u);
}

TEST(ReportPage, extreme_times_make_a_page) {
    // Times at both ends of int64 (hostile or broken records): bounded bins, no overflow.
    ReportData d;
    for (const char* t : {"-9223372036854775808", "9223372036854775807", "0"})
        d.add(std::string(R"({"type":"e2e","src_ip":"10.0.0.1","pid":1,"comm":"c","cgroup":1,)") +
              R"("host":"h","t_first_ns":)" + t +
              R"(,"net_ns":9223372036854775807,"host_ns":-5,"completion_ns":1,"total_ns":1})");
    EXPECT_LE(d.net.series()[0].points.size(), 400u);
    EXPECT_EQ(d.t_min_ns, std::numeric_limits<int64_t>::min());
    const std::string page = render_page(d, "", "x");
    EXPECT_NE(page.find("data-chart-list=\"chart-cdf-0=9 chart-net=3\""), std::string::npos);
}

TEST(ReportPage, hostile_text_stays_text) {
    ReportData d;
    d.add(kE2e);
    d.add(R"({"type":"summary","e2e":1,"note":"<img src=x onerror=y()>"})");
    const std::string page = render_page(d, "/*lib*/", "in</script>.jsonl");
    EXPECT_EQ(page.find("<svg"), std::string::npos);
    EXPECT_EQ(page.find("<img"), std::string::npos);
    EXPECT_EQ(page.find("<b>h"), std::string::npos);
    EXPECT_NE(page.find("&lt;img src=x onerror=y()&gt;"), std::string::npos);
    EXPECT_NE(page.find("in&lt;/script&gt;.jsonl"), std::string::npos);
    // Exactly the page's own four script elements end: the error capture, the library, the
    // data block and the drawing script.
    EXPECT_EQ(count(page, "</script>"), 4u);
    const ChartData charts = make_chart_data(d);
    ASSERT_EQ(charts.charts.size(), 2u);  // one CDF (1 message x 3 parts), the net chart
    EXPECT_EQ(charts.charts[0], std::make_pair(std::string("chart-cdf-0"), std::size_t{3}));
    EXPECT_EQ(charts.charts[1], std::make_pair(std::string("chart-net"), std::size_t{1}));
    EXPECT_NE(page.find("data-chart-list=\"chart-cdf-0=3 chart-net=1\""), std::string::npos);
}

std::string alert_line(const std::string& kind, const std::string& severity, int64_t t,
                       uint64_t qpn, const std::string& source, uint64_t count = 1,
                       const std::string& evidence = "{}") {
    return R"({"type":"alert","kind":")" + kind + R"(","severity":")" + severity + R"(","t_ns":)" +
           std::to_string(t) + R"(,"count":)" + std::to_string(count) +
           R"(,"victim":{"ip":"10.0.0.2","qpn":)" + std::to_string(qpn) +
           R"(,"pid":300,"comm":"server","cgroup":9,"host":"hB"},"source":)" + source +
           R"(,"evidence":)" + evidence + "}";
}

const char* kTraced =
    R"({"ip":"10.0.0.5","qpn":7,"pid":26,"comm":"insert-attack","host":"h4","claimed":false})";
const char* kUntraced =
    R"({"ip":"10.0.0.5","qpn":null,"pid":null,"comm":null,"host":null,"claimed":true})";

TEST(AlertGroups, who_attacked_whom) {
    ReportData d;
    // Four rkey_unknown on four QPs of one process from one traced source: one group, three
    // QPNs named and one more; a peer_mismatch from the same address, only claimed: another.
    for (int k = 0; k < 4; ++k)
        d.add(alert_line("rkey_unknown", "warning", 100 + k, 80 + k, kTraced, 3));
    d.add(alert_line("peer_mismatch", "critical", 500, 80, kUntraced));
    const AlertGroups& g = d.alert_groups;
    EXPECT_EQ(g.alerts(), 5u);
    EXPECT_EQ(g.critical(), 1u);
    const auto groups = g.ordered();
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0]->kind, "peer_mismatch");  // critical first
    EXPECT_TRUE(groups[0]->claimed);
    EXPECT_EQ(groups[0]->source, "10.0.0.5");
    EXPECT_EQ(groups[1]->victim, "server[300]@hB 10.0.0.2");
    EXPECT_EQ(groups[1]->source, "insert-attack[26]@h4 10.0.0.5");
    EXPECT_EQ(groups[1]->victim_qpns, (std::vector<uint64_t>{80, 81, 82}));
    EXPECT_EQ(groups[1]->more_qpns, 1u);
    EXPECT_EQ(groups[1]->alerts, 4u);
    EXPECT_EQ(groups[1]->offences, 12u);
    EXPECT_EQ(groups[1]->t_first_ns, 100);
    EXPECT_EQ(g.victims(), std::vector<std::string>{"server[300]@hB 10.0.0.2"});
    // The known kinds in docs/correlation.md 8's order.
    const auto kinds = g.kinds();
    ASSERT_EQ(kinds.size(), 2u);
    EXPECT_EQ(kinds[0], std::make_pair(std::string("rkey_unknown"), uint64_t{4}));

    std::string html;
    append_verdict(html, d, false);
    EXPECT_NE(html.find("5 alerts (1 critical) against 1 victim: 4 rkey_unknown, 1 peer_mismatch."),
              std::string::npos);
    EXPECT_NE(html.find("claimed source 10.0.0.5 (possibly spoofed)"), std::string::npos);
    EXPECT_NE(html.find("server[300]@hB 10.0.0.2 QP 0x000050, 0x000051, 0x000052 and 1 more"),
              std::string::npos);
    EXPECT_NE(html.find("No congestion episodes."), std::string::npos);
}

// docs/correlation.md 8: where a claimed source's packet came from, in the words the
// terminal uses - of the group's first alert whose origin differs, the ports when there.
TEST(AlertGroups, the_verdict_says_where_the_packet_came_from) {
    ReportData d;
    const std::string same =
        R"({"origin":{"src_mac":"02:00:00:00:00:01","ttl":64,"port":0,)"
        R"("usual":{"src_mac":"02:00:00:00:00:01","ttl":64,"port":0},"differs":[]}})";
    const std::string forged = R"({"origin":{"src_mac":"02:00:00:00:00:05","ttl":63,"port":1,)"
                               R"("usual":{"src_mac":"02:00:00:00:00:01","ttl":64,"port":0},)"
                               R"("differs":["src_mac","ttl","port"]}})";
    d.add(alert_line("injected_message", "critical", 100, 80, kUntraced, 1, same));
    d.add(alert_line("injected_message", "critical", 3'000'000'000, 80, kUntraced, 1, forged));
    d.add(alert_line("peer_mismatch", "critical", 200, 81, kUntraced, 1, R"({"origin":null})"));
    const auto groups = d.alert_groups.ordered();
    ASSERT_EQ(groups.size(), 2u);
    const std::string want =
        "arrived with source MAC 02:00:00:00:00:05, TTL 63, port 1 where 10.0.0.5's packets "
        "had 02:00:00:00:00:01, TTL 64, port 0";
    EXPECT_EQ(groups[0]->origin, want);
    EXPECT_TRUE(groups[1]->origin.empty());  // origin null: an older insert-dp's records
    std::string html;
    append_verdict(html, d, false);
    EXPECT_NE(html.find("(possibly spoofed)<br><span class=\"origin\">arrived with source MAC "
                        "02:00:00:00:00:05, TTL 63, port 1 where 10.0.0.5&#39;s packets had"),
              std::string::npos)
        << html;
}

TEST(AlertGroups, bounded_against_a_hostile_file) {
    ReportLimits limits;
    limits.alert_groups = 3;
    ReportData d(limits);
    for (int k = 0; k < 10; ++k) {
        const std::string source = R"({"ip":"10.0.0.)" + std::to_string(k) + R"(","claimed":true})";
        d.add(alert_line("kind" + std::to_string(k), "warning", k, 1, source));
    }
    EXPECT_EQ(d.alert_groups.ordered().size(), 3u);
    EXPECT_EQ(d.alert_groups.ungrouped(), 7u);
    EXPECT_EQ(d.alert_groups.alerts(), 10u);
}

TEST(Verdict, lists_every_kind_first) {
    // 14 groups of rkey_unknown (a source each), then one access_denied: 12 rows, the
    // access_denied among them, the 3 alerts of the rows left out counted.
    ReportData d;
    for (int k = 0; k < 14; ++k) {
        const std::string source = R"({"ip":"10.0.1.)" + std::to_string(k) + R"(","claimed":true})";
        d.add(alert_line("rkey_unknown", "warning", k, 1, source));
    }
    d.add(alert_line("access_denied", "warning", 99, 2, kTraced));
    std::string html;
    append_verdict(html, d, false);
    EXPECT_EQ(count(html, "<tr><td class=\"kind\">"), 12u);
    EXPECT_NE(html.find("access_denied</td><td>insert-attack[26]@h4 10.0.0.5</td>"),
              std::string::npos);
    EXPECT_NE(html.find("3 more alerts not listed here"), std::string::npos);
}

TEST(Verdict, says_when_nothing_happened) {
    ReportData d;
    d.add(kE2e);
    std::string html;
    append_verdict(html, d, false);
    EXPECT_NE(html.find("class=\"quiet\""), std::string::npos);
    EXPECT_NE(html.find("No alerts, no congestion episodes."), std::string::npos);
    html.clear();
    append_verdict(html, d, true);  // a live page: so far
    EXPECT_NE(html.find("No alerts, no congestion episodes so far."), std::string::npos);
}

TEST(CongestionText, per_message_never_a_sum) {
    EXPECT_EQ(duration_text(840), "840 ns");
    EXPECT_EQ(duration_text(12'340), "12.3 us");
    EXPECT_EQ(duration_text(1'840'000, true), "+1.84 ms");
    EXPECT_EQ(duration_text(-200'000, true), "-200 us");
    EXPECT_EQ(duration_text(2.1e9), "2.10 s");
    EXPECT_EQ(share_text(0.31), "31%");
    EXPECT_EQ(share_text(0.062), "6.2%");
    EXPECT_EQ(share_text(0.0001), "<0.1%");
    EXPECT_EQ(share_text(std::nullopt), "-");
    EXPECT_EQ(bytes_text(6'200'000), "6.20 MB");

    simdjson::dom::parser parser;
    simdjson::dom::element e;
    ASSERT_EQ(parser
                  .parse(std::string(
                      R"({"type":"congestion","t_start_ns":0,"t_end_ns":20000000,)"
                      R"("where":{"node":"hB","dst_ips":["10.0.0.2"]},)"
                      R"("signals":{"p99_net_ns":3400000,"baseline_net_ns":5000,"cnps":4},)"
                      R"("victims":[{"ip":"10.0.0.3","pid":5,"comm":"kv","host":"hC","msgs":20,)"
                      R"("net_ns_mean":2440000,"net_ns_p99":3400000,"baseline_net_ns_mean":600000,)"
                      R"("baseline_net_ns_p99":200000,"added_net_ns_mean":1840000,)"
                      R"("added_net_ns_p99":3200000,"cnps":0,"contributor":true},)"
                      R"({"ip":"10.0.0.9","pid":9,"comm":"old","host":"hE","msgs":2000,)"
                      R"("added_net_ns":58031590800}],)"
                      R"("contributors":[{"ip":"10.0.0.3","pid":5,"comm":"kv","host":"hC",)"
                      R"("msgs":20,"bytes":3100000,"bytes_share":0.31,"victim":true}]})"))
                  .get(e),
              simdjson::SUCCESS);
    const auto victims = episode_victims(e);
    ASSERT_EQ(victims.size(), 2u);
    std::string out;
    append_victim(out, victims[0], e);
    EXPECT_EQ(
        out,
        "<b>kv[5]@hC 10.0.0.3</b>: +1.84 ms per message (p99 +3.20 ms), 4.1x its usual 600 us, 20 "
        "messages; also contributes 31% of the bytes");
    out.clear();
    append_victim(out, victims[1], e);  // the earlier shape: a sum, never shown
    EXPECT_EQ(out, "<b>old[9]@hE 10.0.0.9</b>: - per message (p99 -), 2000 messages");
    out.clear();
    append_contributor(out, episode_contributors(e)[0], e);
    EXPECT_EQ(out,
              "<b>kv[5]@hC 10.0.0.3</b>: 31% of the bytes (3.10 MB in 20 messages), also a victim");
    EXPECT_EQ(episode_headline(e),
              "toward hB (10.0.0.2) for 20.0 ms: p99 network latency 3.40 ms (baseline 5.00 us), 4 "
              "CNPs");
}

TEST(AlertAxis, fits_the_alerts_and_breaks_between_bursts) {
    // Alerts over 97-99 s of a 100 s run: one segment, those 2 s padded by 4%.
    std::vector<std::pair<double, double>> even;
    for (int k = 0; k <= 100; ++k) even.emplace_back(97 + k * 0.02, 97 + k * 0.02);
    const AlertAxis one(even, 100);
    ASSERT_EQ(one.segments().size(), 1u);
    EXPECT_NEAR(one.segments()[0].from_s, 96.92, 1e-9);
    EXPECT_NEAR(one.segments()[0].to_s, 99.08, 1e-9);
    EXPECT_NEAR(one.x(98), AlertAxis::kWidth / 2, 1e-9);
    // Ten alerts within 4 ms, one at 1.3 s, one at 2.6 s: three segments; the burst gets
    // 0.1 + 0.7 x 10/12 of the width left after two breaks.
    std::vector<std::pair<double, double>> bursts;
    for (int k = 0; k < 10; ++k) bursts.emplace_back(0.0002 + k * 0.0004, 0.0002 + k * 0.0004);
    bursts.emplace_back(1.3, 1.3);
    bursts.emplace_back(2.6, 2.6);
    const AlertAxis broken(bursts, 2.6);
    ASSERT_EQ(broken.segments().size(), 3u);
    const double width = AlertAxis::kWidth - 2 * AlertAxis::kBreakWidth;
    EXPECT_NEAR(broken.segments()[0].x1, width * (0.1 + 0.7 * 10 / 12), 1e-6);
    EXPECT_EQ(broken.segments()[2].x1, AlertAxis::kWidth);
    EXPECT_LT(broken.segments()[0].to_s, 0.005);
    EXPECT_GT(broken.x(1.3), broken.segments()[0].x1 + AlertAxis::kBreakWidth);
    // A single alert: in the middle of 2% of the run around it.
    const AlertAxis lone({{5, 5}}, 100);
    EXPECT_NEAR(lone.segments()[0].from_s, 4, 1e-9);
    EXPECT_NEAR(lone.x(5), AlertAxis::kWidth / 2, 1e-9);
}

}  // namespace
}  // namespace insert::correlate::report
