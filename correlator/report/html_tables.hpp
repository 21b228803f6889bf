// The report's tables, as HTML: every value from a record goes through append_html.
#pragma once

#include <string>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

void append_summary_table(std::string& out, const ReportData& d);
void append_clock_table(std::string& out, const ReportData& d);
void append_app_table(std::string& out, const ReportData& d, std::size_t max_rows = 100);
void append_alert_table(std::string& out, const ReportData& d);
void append_congestion_table(std::string& out, const ReportData& d);
void append_pair_table(std::string& out, const ReportData& d);

// "1.234567 s" since the report's origin, or "-".
std::string since_origin(const ReportData& d, std::optional<int64_t> t_ns);

}  // namespace insert::correlate::report
