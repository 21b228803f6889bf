// The Prometheus text format writer (dataplane/common/prometheus_text.hpp): families with
// HELP and TYPE, label escaping, values, fixed-bucket histograms.
#include "dataplane/common/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace insert::prometheus {
namespace {

TEST(PrometheusText, family_has_help_and_type_then_its_samples) {
    std::string out;
    TextWriter w(out);
    w.family("insert_x_total", MetricType::counter, "Frames. Non-zero: some arrived.")
        .sample({{"port", "p0"}}, uint64_t{7})
        .sample({{"port", "p1"}}, uint64_t{0});
    w.family("insert_up", MetricType::gauge, "1 while running").sample({}, uint64_t{1});
    EXPECT_EQ(out,
              "# HELP insert_x_total Frames. Non-zero: some arrived.\n"
              "# TYPE insert_x_total counter\n"
              "insert_x_total{port=\"p0\"} 7\n"
              "insert_x_total{port=\"p1\"} 0\n"
              "# HELP insert_up 1 while running\n"
              "# TYPE insert_up gauge\n"
              "insert_up 1\n");
}

TEST(PrometheusText, label_values_and_help_are_escaped) {
    std::string out;
    TextWriter w(out);
    w.family("insert_g", MetricType::gauge, "a \\ b\nc \"q\"")
        .sample({{"app", "a\"b\\c\nd[1]@h"}, {"k", ""}}, int64_t{-3});
    EXPECT_EQ(out,
              "# HELP insert_g a \\\\ b\\nc \"q\"\n"
              "# TYPE insert_g gauge\n"
              "insert_g{app=\"a\\\"b\\\\c\\nd[1]@h\",k=\"\"} -3\n");
}

TEST(PrometheusText, values_in_shortest_exact_form) {
    std::string out;
    append_value(out, 0.25);
    out += ' ';
    append_value(out, -1.5e-7);
    out += ' ';
    append_value(out, std::numeric_limits<double>::quiet_NaN());
    out += ' ';
    append_value(out, std::numeric_limits<double>::infinity());
    out += ' ';
    append_value(out, -std::numeric_limits<double>::infinity());
    out += ' ';
    append_value(out, 1700000000.123);
    EXPECT_EQ(out, "0.25 -1.5e-07 NaN +Inf -Inf 1.700000000123e+09");
}

TEST(PrometheusText, values_laid_out_as_the_go_clients_do) {
    // Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus's clients write le with.
    const std::pair<double, const char*> cases[] = {
        {1e-6, "1e-06"},      {5e-6, "5e-06"},      {1e-5, "1e-05"}, {1e-4, "0.0001"},
        {2e-4, "0.0002"},     {0.005, "0.005"},     {0.1, "0.1"},    {1.0, "1"},
        {10.0, "10"},         {123456.0, "123456"}, {1e6, "1e+06"},  {2.5e6, "2.5e+06"},
        {-0.0025, "-0.0025"}, {0.0, "0"},           {1.5, "1.5"},    {1e21, "1e+21"},
        {12.375, "12.375"},   {1e-300, "1e-300"},
    };
    for (const auto& [v, want] : cases) {
        std::string out;
        append_value(out, v);
        EXPECT_EQ(out, want) << v;
    }
}

TEST(PrometheusText, histogram_buckets_are_cumulative_with_sum_and_count) {
    static constexpr double kBounds[] = {0.001, 0.01, 0.1};
    Histogram h(kBounds);
    for (double v : {0.0005, 0.001, 0.002, 0.05, 0.5, -1.0}) h.observe(v);
    EXPECT_EQ(h.count(), 6u);
    EXPECT_DOUBLE_EQ(h.sum(), 0.0005 + 0.001 + 0.002 + 0.05 + 0.5 - 1.0);
    std::string out;
    TextWriter w(out);
    w.family("insert_latency_seconds", MetricType::histogram, "Latency.")
        .histogram({{"part", "net"}}, h);
    std::string sum;
    append_value(sum, h.sum());
    EXPECT_EQ(out,
              "# HELP insert_latency_seconds Latency.\n"
              "# TYPE insert_latency_seconds histogram\n"
              "insert_latency_seconds_bucket{part=\"net\",le=\"0.001\"} 3\n"
              "insert_latency_seconds_bucket{part=\"net\",le=\"0.01\"} 4\n"
              "insert_latency_seconds_bucket{part=\"net\",le=\"0.1\"} 5\n"
              "insert_latency_seconds_bucket{part=\"net\",le=\"+Inf\"} 6\n"
              "insert_latency_seconds_sum{part=\"net\"} " +
                  sum +
                  "\n"
                  "insert_latency_seconds_count{part=\"net\"} 6\n");
}

TEST(PrometheusText, histograms_merge_and_latency_buckets_span_1us_to_10s) {
    const auto b = latency_buckets_seconds();
    ASSERT_FALSE(b.empty());
    EXPECT_DOUBLE_EQ(b.front(), 1e-6);
    EXPECT_DOUBLE_EQ(b.back(), 10.0);
    for (std::size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
    Histogram a(b), c(b);
    a.observe(3e-6);
    c.observe(3e-6);
    c.observe(20.0);
    a.merge(c);
    EXPECT_EQ(a.count(), 3u);
    EXPECT_EQ(a.counts()[2], 2u);  // (2 us, 5 us]
    EXPECT_EQ(a.counts().back(), 1u);
}

TEST(PrometheusText, names_are_checked) {
    EXPECT_TRUE(valid_name("insert_dp_frames_total", true));
    EXPECT_TRUE(valid_name("a:b", true));
    EXPECT_FALSE(valid_name("a:b", false));
    EXPECT_FALSE(valid_name("1abc", true));
    EXPECT_FALSE(valid_name("", false));
    EXPECT_FALSE(valid_name("a-b", false));
}

}  // namespace
}  // namespace insert::prometheus
