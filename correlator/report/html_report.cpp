#include "correlator/report/html_report.hpp"

#include "correlator/report/html_page.hpp"
#include "correlator/report/report_file.hpp"

namespace insert::correlate::report {

bool HtmlReport::open(const std::string& option, const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& others,
                      const std::string& chart_library, std::string& error) {
    option_ = option;
    path_ = path;
    others_ = others;
    if (!check_report_path(option, path, others, error)) return false;
    if (!load_chart_library(chart_library, library_, error)) {
        error = option + ": " + error;
        return false;
    }
    return true;
}

std::string HtmlReport::page(std::string_view source) const {
    return render_page(data_, library_, source);
}

bool HtmlReport::write(std::string_view source, std::string& error) const {
    // Checked again: an input may have appeared under that name while the run went on.
    if (!check_report_path(option_, path_, others_, error)) return false;
    return write_report_file(option_, path_, page(source), error);
}

std::vector<std::pair<std::string, std::string>> run_files(const std::vector<std::string>& inputs,
                                                           const std::string& records) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const std::string& in : inputs) files.emplace_back(in, "the input");
    if (!records.empty() && records != "-") files.emplace_back(records, "the --records output");
    return files;
}

std::string run_source(const std::vector<std::string>& inputs, const std::string& listen) {
    std::string text = "insert-correlate";
    for (const std::string& in : inputs) text += " " + (in == "-" ? std::string("stdin") : in);
    if (!listen.empty()) text += " --listen " + listen;
    return text;
}

}  // namespace insert::correlate::report
