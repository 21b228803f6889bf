// insert-correlate's /metrics text (correlator/run/run_metrics.hpp) from record lines: latency
// histograms per application with the bounds inclusive, at most kMetricsApps of them and
// the rest as app="other", a live application's series gone with its final record, alerts
// fired and written, congestion, clocks, and the run's state.
#include "correlator/run/run_metrics.hpp"

#include <gtest/gtest.h>

#include <string>

namespace insert::correlate {
namespace {

std::string e2e(const std::string& comm, int pid, const std::string& host, int64_t host_ns,
                int64_t net_ns, int64_t completion_ns) {
    return std::string("{\"type\":\"e2e\",\"pid\":") + std::to_string(pid) + ",\"comm\":\"" + comm +
           "\",\"host_ns\":" + std::to_string(host_ns) + ",\"net_ns\":" + std::to_string(net_ns) +
           ",\"completion_ns\":" + std::to_string(completion_ns) +
           ",\"total_ns\":" + std::to_string(host_ns + net_ns + completion_ns) + ",\"host\":\"" +
           host + "\"}";
}

// The value of the first series that starts with `series` (name and labels), or -1.
double value(const std::string& text, const std::string& series) {
    const auto at = text.find(std::string("\n") + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
}

TEST(RunMetrics, latency_per_app_and_part_with_inclusive_bounds) {
    RunMetrics m(true);
    for (int i = 0; i < 3; ++i) m.record(e2e("app", 7, "h1", 1000, 5000, 2000));
    m.record(e2e("app", 7, "h1", 1000, 205000, -3000));  // a negative part: lowest bucket
    m.record(
        "{\"type\":\"e2e\",\"pid\":7,\"comm\":\"app\",\"host_ns\":null,\"net_ns\":null,"
        "\"completion_ns\":null,\"total_ns\":null,\"host\":\"h1\"}");
    const std::string t = m.text(RunState{});
    const std::string net = "insert_correlate_latency_seconds_bucket{app=\"app[7]@h1\",part=";
    EXPECT_EQ(value(t, net + "\"network\",le=\"2e-06\"}"), 0);
    EXPECT_EQ(value(t, net + "\"network\",le=\"5e-06\"}"), 3);  // 5000 ns is in le=5e-06
    EXPECT_EQ(value(t, net + "\"network\",le=\"0.0002\"}"), 3);
    EXPECT_EQ(value(t, net + "\"network\",le=\"0.0005\"}"), 4);
    EXPECT_EQ(value(t, net + "\"network\",le=\"+Inf\"}"), 4);
    EXPECT_EQ(value(t, net + "\"completion\",le=\"1e-06\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_latency_seconds_count{app=\"app[7]@h1\",part=\"total\"}"),
              4);
    EXPECT_EQ(value(t, "insert_correlate_e2e_total"), 5);
    EXPECT_EQ(value(t, "insert_correlate_records_written_total{type=\"e2e\"}"), 5);
    EXPECT_EQ(value(t, "insert_correlate_latency_apps"), 1);
}

TEST(RunMetrics, apps_beyond_the_cap_are_other_and_a_final_record_frees_a_slot) {
    RunMetrics m(true);
    for (std::size_t a = 0; a < kMetricsApps + 5; ++a)
        m.record(
            e2e(std::string("p") + std::to_string(a), static_cast<int>(a), "h", 1000, 1000, 1000));
    std::string t = m.text(RunState{});
    EXPECT_EQ(value(t, "insert_correlate_latency_apps"), static_cast<double>(kMetricsApps));
    EXPECT_EQ(value(t, "insert_correlate_latency_seconds_count{app=\"other\",part=\"host\"}"), 5);
    EXPECT_EQ(t.find(std::string("app=\"p") + std::to_string(kMetricsApps) + "["),
              std::string::npos);
    // p0's process exited: its final app record. It keeps its series until the next new
    // application takes its place; its counts then go to "other".
    m.record("{\"type\":\"app\",\"host\":\"h\",\"pid\":0,\"comm\":\"p0\",\"final\":true}");
    m.record("{\"type\":\"app\",\"host\":\"h\",\"pid\":1,\"comm\":\"p1\",\"final\":false}");
    t = m.text(RunState{});
    EXPECT_NE(t.find("app=\"p0[0]@h\""), std::string::npos);
    m.record(e2e("new", 99, "h", 1000, 1000, 1000));
    t = m.text(RunState{});
    EXPECT_EQ(t.find("app=\"p0[0]@h\""), std::string::npos);
    EXPECT_NE(t.find("app=\"p1[1]@h\""), std::string::npos);
    EXPECT_NE(t.find("app=\"new[99]@h\""), std::string::npos);
    EXPECT_EQ(value(t, "insert_correlate_latency_apps"), static_cast<double>(kMetricsApps));
    EXPECT_EQ(value(t, "insert_correlate_latency_seconds_count{app=\"other\",part=\"host\"}"), 6);
    // Without an ended one, a new application goes to "other".
    m.record(e2e("newer", 100, "h", 1000, 1000, 1000));
    t = m.text(RunState{});
    EXPECT_EQ(t.find("app=\"newer[100]@h\""), std::string::npos);
    EXPECT_EQ(value(t, "insert_correlate_latency_seconds_count{app=\"other\",part=\"host\"}"), 7);
}

TEST(RunMetrics, alerts_fired_written_and_firing) {
    RunMetrics live(true);
    live.alert_fired(AlertKind::rkey_unknown);
    live.alert_fired(AlertKind::rkey_unknown);
    live.alert_fired(AlertKind::rkey_scan);
    live.record("{\"type\":\"alert\",\"kind\":\"rkey_unknown\",\"t_ns\":1}");
    live.episode_fired();
    live.record("{\"type\":\"congestion\",\"t_start_ns\":1}");
    std::string t = live.text(RunState{});
    EXPECT_EQ(value(t, "insert_correlate_alerts_fired_total{kind=\"rkey_unknown\"}"), 2);
    EXPECT_EQ(value(t, "insert_correlate_alerts_total{kind=\"rkey_unknown\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_alerts_firing{kind=\"rkey_unknown\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_alerts_firing{kind=\"rkey_scan\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_alerts_total{kind=\"peer_mismatch\"}"), 0);
    EXPECT_EQ(value(t, "insert_correlate_congestion_episodes_fired_total"), 1);
    EXPECT_EQ(value(t, "insert_correlate_congestion_episodes_total"), 1);
    // A batch run tells its alerts as it writes them.
    RunMetrics batch(false);
    batch.record("{\"type\":\"alert\",\"kind\":\"peer_mismatch\",\"t_ns\":1}");
    t = batch.text(RunState{});
    EXPECT_EQ(value(t, "insert_correlate_alerts_fired_total{kind=\"peer_mismatch\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_alerts_firing{kind=\"peer_mismatch\"}"), 0);
    EXPECT_EQ(t.find("insert_correlate_watermark_lag_seconds"), std::string::npos);
    EXPECT_NE(t.find("insert_correlate_info{version=\""), std::string::npos);
    EXPECT_NE(t.find("mode=\"batch\"} 1"), std::string::npos);
}

TEST(RunMetrics, clocks_and_the_run_state) {
    RunMetrics m(true);
    ClockEstimate e;
    e.offset = -2'500'000;
    e.source = ClockSource::midpoint;
    e.consistent = false;
    m.set_clocks({{"node\"7", e}});
    RunState s;
    s.inputs.msg = 10;
    s.inputs.host = 20;
    s.inputs.not_json = 3;
    s.join.unmatched_wr = 4;
    s.join.wire_only = 5;
    s.join.src_host_untraced = 6;
    s.late = 7;
    s.held = 8;
    s.windows = 9;
    DeliveryCounts am;
    am.sent = 11;
    am.dropped = 2;
    s.alertmanager = am;
    s.finished = true;
    std::string t = m.text(s);
    EXPECT_EQ(value(t,
                    "insert_correlate_clock_offset_seconds{host=\"node\\\"7\","
                    "source=\"midpoint\"}"),
              -0.0025);
    EXPECT_EQ(value(t, "insert_correlate_clock_inconsistent{host=\"node\\\"7\"}"), 1);
    EXPECT_EQ(value(t, "insert_correlate_records_in_total{type=\"msg\"}"), 10);
    EXPECT_EQ(value(t, "insert_correlate_records_in_total{type=\"host\"}"), 20);
    EXPECT_EQ(value(t, "insert_correlate_bad_lines_total{reason=\"not_json\"}"), 3);
    EXPECT_EQ(value(t, "insert_correlate_unmatched_work_requests_total"), 4);
    EXPECT_EQ(value(t, "insert_correlate_wire_only_messages_total"), 5);
    EXPECT_EQ(value(t, "insert_correlate_untraced_messages_total{source=\"host\"}"), 6);
    EXPECT_EQ(value(t, "insert_correlate_late_records_total"), 7);
    EXPECT_EQ(value(t, "insert_correlate_held_records"), 8);
    EXPECT_EQ(value(t, "insert_correlate_windows_total"), 9);
    EXPECT_EQ(value(t, "insert_correlate_watermark_lag_seconds"), 0);  // no window yet
    EXPECT_EQ(value(t, "insert_correlate_alertmanager_alerts_total{result=\"sent\"}"), 11);
    EXPECT_EQ(value(t, "insert_correlate_alertmanager_alerts_total{result=\"dropped\"}"), 2);
    EXPECT_EQ(value(t, "insert_correlate_finished"), 1);
    // The clock records of the end replace the windows' estimates.
    m.record(
        "{\"type\":\"clock\",\"host\":\"node\\\"7\",\"lo_ns\":0,\"hi_ns\":10,"
        "\"offset_ns\":5,\"source\":\"midpoint\",\"consistent\":true,\"matches\":3}");
    t = m.text(s);
    EXPECT_EQ(value(t,
                    "insert_correlate_clock_offset_seconds{host=\"node\\\"7\","
                    "source=\"midpoint\"}"),
              5e-9);
    EXPECT_EQ(value(t, "insert_correlate_clock_inconsistent{host=\"node\\\"7\"}"), 0);
}

}  // namespace
}  // namespace insert::correlate
