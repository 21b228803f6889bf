// insert-report: the HTML page of insert-correlate's records (docs/correlation.md 10):
// latency CDFs per application, congestion over time, the alert timeline and the tables,
// with Chart.js inlined. The same page as `insert-correlate --html`.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "correlator/report/html_report.hpp"
#include "dataplane/common/version.hpp"

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-report: %s\n", message.c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "insert-report: writes insert-correlate's records as one self-contained HTML page "
        "(docs/correlation.md section 10)",
        "insert-report"};
    app.set_version_flag("--version", insert::version_line("insert-report"),
                         "print the version and exit");
    app.footer(
        "Examples:\n"
        "  insert-correlate dp.jsonl trace.jsonl --records correlated.jsonl\n"
        "  insert-report correlated.jsonl --html report.html\n"
        "  insert-correlate dp.jsonl trace.jsonl --records - --quiet | insert-report - --html "
        "r.html\n"
        "The chart library is Debian's libjs-chart.js (--chartjs or $INSERT_CHARTJS to use\n"
        "another copy of Chart.js's UMD build); the page loads nothing from anywhere.\n");
    std::string input, html, chartjs;
    app.add_option("records", input, "insert-correlate's records (JSON Lines; '-': standard input)")
        ->required();
    app.add_option("--html", html, "write the page here")->required();
    app.add_option("--chartjs", chartjs, "Chart.js UMD build to inline (default: libjs-chart.js)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 0;
    } catch (const CLI::ParseError& e) {
        return fail(e.what());
    }
    if (input.empty()) return fail("records: empty path");

    insert::correlate::report::HtmlReport report;
    std::string error;
    if (!report.open("--html", html, {{input, "the input"}}, chartjs, error)) return fail(error);

    std::ifstream file;
    std::istream* in = &std::cin;
    if (input != "-") {
        file.open(input, std::ios::binary);
        if (!file) return fail(input + ": cannot open (" + std::strerror(errno) + ")");
        in = &file;
    }
    std::string line;
    while (std::getline(*in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) report.add(line);
    }
    if (in->bad()) return fail(input + ": read error");
    const auto& d = report.data();
    if (d.lines == d.unreadable)
        return fail((input == "-" ? std::string("standard input") : input) +
                    ": no insert-correlate records in " + std::to_string(d.lines) + " lines");
    if (d.unreadable)
        std::fprintf(stderr,
                     "insert-report: %s: %llu of %llu lines are not insert-correlate "
                     "records (skipped)\n",
                     input.c_str(), static_cast<unsigned long long>(d.unreadable),
                     static_cast<unsigned long long>(d.lines));
    if (!report.write(input == "-" ? "standard input" : input, error)) return fail(error);
    return 0;
}
