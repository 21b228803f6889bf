#include "correlator/tools/correlate_options.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <thread>

namespace insert::correlate {

namespace {

// HOST=NS with NS a signed integer.
bool parse_offset(const std::string& text, ClockPolicy& policy, std::string& error) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0) {
        error = "--clock-offset " + text + ": expected HOST=NS";
        return false;
    }
    int64_t ns = 0;
    const char* first = text.data() + eq + 1;
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, ns);
    if (ec != std::errc() || end != last || first == last) {
        error = "--clock-offset " + text + ": NS must be an integer number of nanoseconds";
        return false;
    }
    const std::string host = text.substr(0, eq);
    if (policy.offsets.count(host)) {
        error = "--clock-offset " + text + ": host " + host + " given twice";
        return false;
    }
    policy.offsets[host] = ns;
    return true;
}

}  // namespace

int parse_correlate_options(int argc, char** argv, CorrelateOptions& out, std::string& error) {
    CLI::App app{
        "insert-correlate: joins insert-trace host records and insert-dp wire records into "
        "end-to-end views (SPEC.md section 10, docs/correlation.md)"};
    app.footer(
        "Inputs are JSON Lines files or '-' (standard input), each holding dataplane records,\n"
        "host records or both, in any order and split in any way.\n\n"
        "Examples:\n"
        "  insert-correlate dp.jsonl trace.jsonl                      # terminal report\n"
        "  insert-correlate dp.jsonl trace-*.jsonl --records e2e.jsonl\n"
        "  insert-correlate dp.jsonl trace.jsonl --records - --quiet | grep '\"type\":\"e2e\"'\n"
        "  insert-correlate dp.jsonl trace.jsonl --clock-offset node7=-2500 --threads 1\n");
    std::vector<std::string> offsets;
    int threads = 0;
    app.add_option("inputs", out.inputs, "input files ('-' for standard input)")->required();
    app.add_option("-o,--records", out.records,
                   "write e2e/app/pair/clock/summary records here ('-' for stdout)");
    app.add_option("--threads", threads, "worker threads (default: every CPU)");
    app.add_option("--clock-offset", offsets,
                   "HOST=NS: host clock minus observer clock, instead of the estimate "
                   "(repeatable)");
    app.add_flag("--same-clock", out.clock.same_clock,
                 "hosts and observers share one clock (offset 0 where no --clock-offset)");
    app.add_flag("-q,--quiet", out.quiet, "no terminal report");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    } catch (const CLI::ParseError& e) {
        error = e.what();
        return 2;
    }
    if (threads < 0 || threads > 1024) {
        error = "--threads " + std::to_string(threads) + ": from 1 to 1024 (0: every CPU)";
        return 2;
    }
    out.threads = threads ? static_cast<unsigned>(threads)
                          : std::max(1u, std::thread::hardware_concurrency());
    for (const std::string& o : offsets)
        if (!parse_offset(o, out.clock, error)) return 2;
    if (app.count("--records") && out.records.empty()) {
        error = "--records: empty path (use '-' for standard output)";
        return 2;
    }
    unsigned stdin_inputs = 0;
    for (const std::string& in : out.inputs) {
        if (in.empty()) {
            error = "input: empty path";
            return 2;
        }
        stdin_inputs += in == "-";
    }
    if (stdin_inputs > 1) {
        error = "input '-' given more than once";
        return 2;
    }
    return -1;
}

}  // namespace insert::correlate
