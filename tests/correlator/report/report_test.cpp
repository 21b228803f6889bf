// The HTML report's parts (correlator/report): escaping of record text, the bounded and
// deterministic latency sample, the time bins, and the page made from records.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "correlator/report/chart_data.hpp"
#include "correlator/report/html_page.hpp"
#include "correlator/report/html_text.hpp"
#include "correlator/report/latency_cdf.hpp"
#include "correlator/report/report_data.hpp"
#include "correlator/report/time_bins.hpp"
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

}  // namespace
}  // namespace insert::correlate::report
