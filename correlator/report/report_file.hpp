// Where the report goes: never onto one of the run's inputs or other outputs, and never
// half-written (the page is written next to its path and renamed into place).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace insert::correlate::report {

// Chart.js's UMD build: `path`, or $INSERT_CHARTJS, or the Debian package's file
// (libjs-chart.js). False with `error` saying what to install.
bool load_chart_library(const std::string& path, std::string& text, std::string& error);

// False with `error` when `path` is empty, a directory, in a directory that does not exist
// or cannot take a new file, or the same file as one of `others` (path, what it is: "the
// input", "the --records output").
bool check_report_path(const std::string& option, const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& others,
                       std::string& error);

bool write_report_file(const std::string& option, const std::string& path, std::string_view page,
                       std::string& error);

}  // namespace insert::correlate::report
