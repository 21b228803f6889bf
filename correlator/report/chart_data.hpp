// The charts' data as one JSON object, read by the page's script: latency CDFs per
// application, network latency per cgroup over time with the congestion episodes, and the
// alert timeline. Times are seconds since the report's origin (the earliest charted
// record), latencies microseconds. Every string is escaped for a <script> block.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

struct ChartData {
    std::string json;
    // Charts the page draws (only those with data), and the data points of each, by the
    // id of its canvas: what a test compares the page's data-points attributes with.
    std::vector<std::pair<std::string, std::size_t>> charts;
};

ChartData make_chart_data(const ReportData& data);

// The alert kinds in the timeline's order (docs/correlation.md 8); unknown kinds follow.
const std::vector<std::string>& known_alert_kinds();

}  // namespace insert::correlate::report
