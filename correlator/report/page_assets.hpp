// The page's fixed parts: its style, the script that records errors (first in <head>, so
// that it sees every later one), and the script that draws the charts with Chart.js.
#pragma once

#include <string_view>

namespace insert::correlate::report {

extern const std::string_view kPageStyle;
extern const std::string_view kErrorCaptureScript;
extern const std::string_view kDrawChartsScript;

}  // namespace insert::correlate::report
