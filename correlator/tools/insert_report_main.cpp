// insert-report: the HTML page of insert-correlate's records (docs/correlation.md 10):
// latency CDFs per application, congestion over time, the alert timeline and the tables,
// with Chart.js inlined. The same page as `insert-correlate --html`; with --nats, the page of
// a scaled-out deployment's output stream (the merged view, docs/scale-out.md).
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "correlator/report/html_report.hpp"
#include "correlator/tools/report_bus.hpp"
#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_leases.hpp"
#include "dataplane/common/version.hpp"

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-report: %s\n", message.c_str());
    return 2;
}

// --nats URL[,URL...] and --nats-subject as insert-correlate takes them; --nats-wait.
bool check_bus_options(const insert::correlate::ReportBusOptions& bus, std::string& error) {
    std::string_view rest = bus.url;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view url = rest.substr(0, comma);
        if (!url.starts_with("nats://") || url.size() <= 7) {
            error = "--nats " + std::string(url) + ": expected nats://HOST:PORT";
            return false;
        }
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
    if (!insert::nats_client::valid_prefix(bus.subject)) {
        error = "--nats-subject " + bus.subject +
                ": one subject token (letters, digits, '_' and '-') - it also names the stream";
        return false;
    }
    if (!(bus.wait_s >= 0 && bus.wait_s <= 3600)) {
        error = "--nats-wait: from 0 to 3600 seconds";
        return false;
    }
    return true;
}

// The merged view: the page of every record on the output stream. Exit 1 when the bus or
// the stream is not there, 2 for the page's own problems (as from a file).
int report_from_bus(const insert::correlate::ReportBusOptions& bus, const std::string& html,
                    const std::string& chartjs) {
    insert::correlate::report::HtmlReport report;
    std::string error;
    if (!report.open("--html", html, {}, chartjs, error)) return fail(error);
    const std::string label = "insert-report: --nats " + bus.url;
    insert::correlate::ReportBusCounts counts;
    if (insert::correlate::read_output_stream(
            bus, label, [&report](std::string_view line) { report.add(line); }, counts, error) !=
        0) {
        std::fprintf(stderr, "%s: %s\n", label.c_str(), error.c_str());
        return 1;
    }
    const std::string stream = insert::output_stream_name(bus.subject);
    const auto& d = report.data();
    if (d.unreadable)
        std::fprintf(stderr, "%s: %llu of %llu lines are not insert-correlate records (skipped)\n",
                     label.c_str(), static_cast<unsigned long long>(d.unreadable),
                     static_cast<unsigned long long>(d.lines));
    std::fprintf(stderr, "%s: %llu records from %llu messages of %s\n", label.c_str(),
                 static_cast<unsigned long long>(d.lines - d.unreadable),
                 static_cast<unsigned long long>(counts.messages), stream.c_str());
    if (!report.write("the output stream " + stream + " at " + bus.url, error)) return fail(error);
    return 0;
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
        "  insert-report --nats nats://10.0.0.5:4222 --html merged.html   (every correlator\n"
        "    instance's records on the output stream insert-out: the merged view)\n"
        "The chart library is Debian's libjs-chart.js (--chartjs or $INSERT_CHARTJS to use\n"
        "another copy of Chart.js's UMD build); the page loads nothing from anywhere.\n");
    std::string input, html, chartjs;
    insert::correlate::ReportBusOptions bus;
    app.add_option("records", input,
                   "insert-correlate's records (JSON Lines; '-': standard input); or --nats");
    app.add_option("--nats", bus.url,
                   "read the records from the bus instead: every message of the output stream "
                   "PREFIX-out of the insert-correlate --nats instances (nats://HOST:PORT, "
                   "comma-separated for a cluster)");
    app.add_option("--nats-subject", bus.subject,
                   "with --nats: the deployment's subject prefix PREFIX (default insert)");
    app.add_option("--nats-wait", bus.wait_s,
                   "with --nats: seconds to wait for an unreachable bus before giving up "
                   "(default 10)");
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
    if (bus.url.empty()) {
        for (const char* option : {"--nats-subject", "--nats-wait"})
            if (app.count(option)) return fail(std::string(option) + ": needs --nats URL");
        if (!app.count("records"))
            return fail("records is required (a records file or '-'), or --nats URL");
        if (input.empty()) return fail("records: empty path");
    } else {
        if (app.count("records"))
            return fail("--nats: the output stream is the records (no file or '-' with it)");
        if (std::string error; !check_bus_options(bus, error)) return fail(error);
        return report_from_bus(bus, html, chartjs);
    }

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
