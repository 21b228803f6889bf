#include "correlator/run/correlate_run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "correlator/input/ingest.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/batch_progress.hpp"
#include "correlator/output/e2e_writer.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/output/terminal_report.hpp"
#include "correlator/output/views.hpp"
#include "correlator/report/html_report.hpp"
#include "correlator/run/bus_run.hpp"
#include "correlator/run/live_run.hpp"
#include "correlator/run/run_service.hpp"
#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-correlate: %s\n", message.c_str());
    return 2;
}

void report_bad_lines(const std::vector<BadLine>& first_bad, uint64_t bad,
                      const std::vector<std::string>& inputs) {
    for (const BadLine& b : first_bad)
        std::fprintf(stderr, "insert-correlate: %s:%llu: %s\n",
                     inputs[b.input] == "-" ? "stdin" : inputs[b.input].c_str(),
                     static_cast<unsigned long long>(b.line), b.reason.c_str());
    if (bad > first_bad.size())
        std::fprintf(stderr,
                     "insert-correlate: ... %llu bad lines in all (counted in summary.bad)\n",
                     static_cast<unsigned long long>(bad));
}

// docs/correlation.md "Running it": an input with no record of insert-dp or insert-trace
// (a capture, a page, an empty file) or a --clock-offset for a host no input names is a
// mistake to say, in one line, not a run over nothing. Empty when all is well.
std::string check_batch_inputs(const CorrelateOptions& options, const Ingested& in,
                               const HostNames& names) {
    for (std::size_t i = 0; i < options.inputs.size(); ++i) {
        const IngestCounts& c = in.per_input[i];
        if (c.records() != 0) continue;
        const std::string name = options.inputs[i] == "-" ? "stdin" : options.inputs[i];
        std::string why = std::to_string(c.lines) + " lines";
        for (const BadLine& b : in.first_bad)
            if (b.input == i) {
                why += ", line " + std::to_string(b.line) + ": " + b.reason;
                break;
            }
        return name + ": no records of insert-dp or insert-trace (" + why + ")";
    }
    for (const auto& [host, ns] : options.clock.offsets) {
        std::vector<std::string> known;
        for (uint32_t id = 0; id < names.size(); ++id) known.push_back(names.name(id));
        if (std::find(known.begin(), known.end(), host) != known.end()) continue;
        std::sort(known.begin(), known.end());
        std::string hosts;
        for (const std::string& name : known) {
            if (!hosts.empty()) hosts += ' ';
            hosts +=
                terminal_text(name);  // a host's name is the input's: no ESC reaches a terminal
        }
        return "--clock-offset " + host + "=" + std::to_string(ns) + ": no host " + host +
               " in the inputs (" +
               (hosts.empty() ? std::string("none named") : "hosts: " + hosts) + ")";
    }
    return {};
}

}  // namespace

// Inputs that are not regular files (pipes, FIFOs, sockets) arrive as they are written:
// the live correlator reads them; regular files are read to their end in one batch.
bool is_live_run(const CorrelateOptions& options) {
    if (!options.listen.empty() || options.bus.enabled()) return true;
    for (const std::string& in : options.inputs) {
        struct stat st {};
        const int rc = in == "-" ? ::fstat(0, &st) : ::stat(in.c_str(), &st);
        if (rc == 0 && !S_ISREG(st.st_mode)) return true;
    }
    return false;
}

namespace {

int run_batch(const CorrelateOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    HostNames names;
    Ingested in;
    std::string error;
    std::optional<report::HtmlReport> html;  // --html: fed every record line
    if (!options.html.empty() &&
        !html.emplace().open("--html", options.html,
                             report::run_files(options.inputs, options.records), "", error))
        return fail(error);
    std::optional<RunService> service;  // --http: /metrics until the run ends (run_service.hpp)
    if (!options.http.empty() && !service.emplace(options, false).start(error)) return fail(error);
    const bool terminal = ::isatty(STDERR_FILENO) == 1;
    BatchProgress progress(options.progress || (terminal && !options.quiet), terminal,
                           regular_file_bytes(options.inputs));
    if (!ingest(options.inputs, names, in, error,
                [&progress](uint64_t bytes, uint64_t lines) { progress.reading(bytes, lines); })) {
        progress.interrupt();
        return fail(error);
    }
    progress.read_done(in.counts.bytes, in.counts.lines);
    if (const std::string mistake = check_batch_inputs(options, in, names); !mistake.empty()) {
        progress.interrupt();
        return fail(mistake);
    }
    report_bad_lines(in.first_bad, in.counts.bad(), options.inputs);

    HostModel model = build_host_model(in.events, names);
    in.events.clear();
    in.events.shrink_to_fit();
    JoinResult joined = join_batch(model, in.msgs, names, options.clock);
    Views views = make_views(joined, model, in.qps, names);
    std::vector<Offence> offences = find_offences(in.msgs, joined, model, names, options.security);
    attach_origins(offences, in.msgs, joined);
    const std::vector<Alert> alerts = aggregate_alerts(std::move(offences), options.security);
    CongestionTracker congestion(options.congestion);
    feed_congestion(congestion, in.msgs, joined, model, names);
    for (const WireQp& r : in.qps) congestion.add_counters(r);
    const std::vector<CongestionEpisode> episodes = congestion.episodes();

    SummaryCounts summary;
    summary.inputs = in.counts;
    summary.join = joined.counts;
    summary.e2e = joined.matches.size();
    for (const E2eMatch& m : joined.matches) summary.resync += m.resync;
    summary.qps = model.qps.size();
    summary.pairs = views.pairs.size();
    summary.trace_drops = model.trace_drops;
    summary.congestion = episodes.size();
    for (const Alert& a : alerts) ++summary.alerts[static_cast<std::size_t>(a.kind)];
    if (!options.alertmanager.url.empty() && (!alerts.empty() || !episodes.empty())) {
        AlertmanagerClient alertmanager(options.alertmanager);
        enqueue_run(alertmanager, alerts, episodes);
        alertmanager.flush(std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(options.alertmanager.wait_s)));
        summary.alertmanager = alertmanager.counts();
    }
    const auto clocks = host_clocks(model, joined.clocks, names);
    summary.hosts = clocks.size();
    progress.joined();
    summary.wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    OutputStream out;
    if (!options.records.empty() && !out.open(options.records, options.inputs, error))
        return fail(error);
    RecordSink sink(out.is_open() ? &out : nullptr);
    if (html) sink.set_observer([&html](std::string_view line) { html->add(line); });
    if (service) service->observe(sink, html);
    write_e2e(joined, model, in.msgs, names, views.apps, sink);
    progress.written(joined.matches.size());
    summary.apps = views.apps.size();
    for (const Alert& a : alerts) sink.alert(a);
    for (const CongestionEpisode& e : episodes) sink.congestion(e);
    for (const PairView& p : views.pairs) sink.pair(p, names);
    sink.learn_cgroups(in.cgroups, names);  // the tenants' names, before the apps in them
    for (const AppView* a : views.apps.apps()) sink.app(*a, true);
    for (const auto& [host, clock] : clocks) sink.clock(host, clock);
    sink.summary(summary);
    if (service) service->finish(summary);
    if (!sink.flush() || (!out.close() && !out.reader_gone())) return fail(out.error());
    if (html && !html->write(report::run_source(options.inputs, options.listen), error))
        return fail(error);
    if (!options.quiet) {
        const std::string text = terminal_report(summary, views.apps, clocks, alerts, episodes);
        std::fputs(text.c_str(), out.to_stdout() ? stderr : stdout);
    }
    return 0;
}

}  // namespace

std::vector<std::pair<std::string, ClockEstimate>> host_clocks(
    const HostModel& model, const std::vector<ClockEstimate>& clocks, const HostNames& names) {
    std::vector<bool> has_qp(names.size(), false);
    for (const Incarnation& q : model.qps) has_qp[q.host] = true;
    std::vector<std::pair<std::string, ClockEstimate>> out;
    for (uint32_t h = 0; h < names.size() && h < clocks.size(); ++h)
        if (has_qp[h]) out.emplace_back(names.name(h), clocks[h]);
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

int run_correlate(const CorrelateOptions& options) {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, options.threads);
    if (!is_live_run(options)) return run_batch(options);
    return options.bus.enabled() ? run_bus(options) : run_live(options);
}

}  // namespace insert::correlate
