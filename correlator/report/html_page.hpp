// The whole report page: one self-contained HTML file (the chart library inlined, the
// data in a JSON block, no request to anywhere).
#pragma once

#include <string>
#include <string_view>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

// `chart_library`: Chart.js's UMD build as text (load_chart_library); `source`: what the
// records came from, for the page's header. `reload_s` > 0: a live page (insert-correlate
// --http) - made from the records so far, it reloads itself every `reload_s` seconds
// unless its address ends in #pause.
std::string render_page(const ReportData& data, std::string_view chart_library,
                        std::string_view source, double reload_s = 0);

}  // namespace insert::correlate::report
