// The whole report page: one self-contained HTML file (the chart library inlined, the
// data in a JSON block, no request to anywhere).
#pragma once

#include <string>
#include <string_view>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

// `chart_library`: Chart.js's UMD build as text (load_chart_library); `source`: what the
// records came from, for the page's header.
std::string render_page(const ReportData& data, std::string_view chart_library,
                        std::string_view source);

}  // namespace insert::correlate::report
