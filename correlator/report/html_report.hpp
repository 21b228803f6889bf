// The HTML report of a correlator run: fed the run's record lines (RecordSink's observer,
// or a records file), written once at the end as one self-contained page.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

class HtmlReport {
  public:
    explicit HtmlReport(const ReportLimits& limits = {}) : data_(limits) {}

    // Loads the chart library and checks the page's path against the run's files (`others`:
    // path and what it is). False with `error` (naming `option`) when either fails: call it
    // before the run, so that a bad path costs nothing.
    bool open(const std::string& option, const std::string& path,
              const std::vector<std::pair<std::string, std::string>>& others,
              const std::string& chart_library, std::string& error);

    void add(std::string_view line) { data_.add(line); }
    const ReportData& data() const { return data_; }

    // Writes the page; `source` names the records' origin in its header.
    bool write(std::string_view source, std::string& error) const;
    std::string page(std::string_view source) const;

  private:
    ReportData data_;
    std::string option_;
    std::string path_;
    std::vector<std::pair<std::string, std::string>> others_;
    std::string library_;
};

// For insert-correlate --html: the run's files the page must not overwrite (each input,
// and the --records file), and the page's header text naming the inputs.
std::vector<std::pair<std::string, std::string>> run_files(const std::vector<std::string>& inputs,
                                                           const std::string& records);
std::string run_source(const std::vector<std::string>& inputs, const std::string& listen);

}  // namespace insert::correlate::report
