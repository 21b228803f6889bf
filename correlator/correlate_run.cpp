#include "correlator/correlate_run.hpp"

#include <fmt/format.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "correlator/input/ingest.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/output/json_line.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/record_writer.hpp"
#include "correlator/output/terminal_report.hpp"
#include "correlator/output/views.hpp"

namespace insert::correlate {

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-correlate: %s\n", message.c_str());
    return 2;
}

void report_bad_lines(const Ingested& in, const std::vector<std::string>& inputs) {
    for (const BadLine& b : in.first_bad)
        std::fprintf(stderr, "insert-correlate: %s:%llu: %s\n",
                     inputs[b.input] == "-" ? "stdin" : inputs[b.input].c_str(),
                     static_cast<unsigned long long>(b.line), b.reason.c_str());
    const uint64_t bad = in.counts.bad();
    if (bad > in.first_bad.size())
        std::fprintf(stderr,
                     "insert-correlate: ... %llu bad lines in all (counted in summary.bad)\n",
                     static_cast<unsigned long long>(bad));
}

std::string summary_record(const IngestCounts& c, const JoinCounts& j, const Views& v,
                           std::size_t hosts, std::size_t qps, uint64_t trace_drops,
                           double wall_s) {
    std::string out, inputs, bad, evicted;
    {
        JsonLine o(inputs);
        o.u("lines", c.lines)
            .u("msg", c.msg)
            .u("qp", c.qp)
            .u("host", c.host)
            .u("ignored", c.ignored);
        inputs += '}';
    }
    {
        JsonLine o(bad);
        o.u("not_json", c.not_json)
            .u("truncated", c.truncated)
            .u("bad_field", c.bad_field)
            .u("unknown_type", c.unknown_type);
        bad += '}';
    }
    {
        JsonLine o(evicted);
        o.u("wrs", 0).u("msgs", 0).u("completions", 0);
        evicted += '}';
    }
    uint64_t resync = 0;
    for (const E2eRow& r : v.e2e) resync += r.resync;
    JsonLine line(out);
    line.s("type", "summary")
        .raw("inputs", inputs)
        .raw("bad", bad)
        .u("e2e", v.e2e.size())
        .u("exact", v.e2e.size() - resync)
        .u("resync", resync)
        .u("unmatched_wr", j.unmatched_wr)
        .u("wire_only", j.wire_only)
        .u("src_untraced", j.src_untraced)
        .u("src_host_untraced", j.src_host_untraced)
        .u("duplicate_msgs", j.duplicate_msgs)
        .u("pair_conflicts", j.pair_conflicts)
        .u("qps_without_ip", j.qps_without_ip)
        .u("recv_matched", j.recv_matched)
        .u("late", 0)
        .raw("evicted", evicted)
        .u("hosts", hosts)
        .u("qps", qps)
        .u("apps", v.apps.size())
        .u("pairs", v.pairs.size())
        .u("trace_drops", trace_drops)
        .key("wall_s");
    out += fmt::format("{:.3f}", wall_s);
    line.end();
    return out;
}

}  // namespace

int run_correlate(const CorrelateOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, options.threads);

    HostNames names;
    Ingested in;
    std::string error;
    if (!ingest(options.inputs, names, in, error)) return fail(error);
    report_bad_lines(in, options.inputs);

    HostModel model = build_host_model(in.events, names);
    in.events.clear();
    in.events.shrink_to_fit();
    JoinResult joined = join_batch(model, in.msgs, names, options.clock);
    Views views = make_views(joined, model, in.msgs, in.qps, names);

    // Hosts with at least one QP, by name.
    std::vector<std::pair<std::string, ClockEstimate>> clocks;
    {
        std::vector<bool> has_qp(names.size(), false);
        for (const Incarnation& q : model.qps) has_qp[q.host] = true;
        for (uint32_t h = 0; h < names.size(); ++h)
            if (has_qp[h]) clocks.emplace_back(names.name(h), joined.clocks[h]);
        std::sort(clocks.begin(), clocks.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    OutputStream out;
    if (!options.records.empty() && !out.open(options.records, options.inputs, error))
        return fail(error);
    if (out.is_open()) {
        std::string buffer;
        buffer.reserve(1 << 20);
        const auto flush = [&](bool force) {
            if (buffer.size() < (1 << 20) && !force) return true;
            const bool ok = out.write(buffer);
            buffer.clear();
            return ok;
        };
        bool ok = true;
        for (const E2eRow& row : views.e2e) {
            append_e2e(buffer, row, names);
            if (!(ok = flush(false))) break;
        }
        for (const PairView& p : views.pairs)
            if (ok) append_pair(buffer, p, names);
        for (const AppView& a : views.apps)
            if (ok) append_app(buffer, a, true);
        for (const auto& [host, clock] : clocks)
            if (ok) append_clock(buffer, host, clock);
        if (ok)
            buffer += summary_record(in.counts, joined.counts, views, clocks.size(),
                                     model.qps.size(), model.trace_drops, wall_s);
        if (ok) flush(true);
        if (!out.close() && !out.reader_gone()) return fail(out.error());
    }
    if (!options.quiet) {
        RunReport report;
        report.counts = &in.counts;
        report.join = &joined.counts;
        report.views = &views;
        report.clocks = clocks;
        report.qps = model.qps.size();
        report.wall_s = wall_s;
        const std::string text = terminal_report(report);
        std::fputs(text.c_str(), out.to_stdout() ? stderr : stdout);
    }
    return 0;
}

}  // namespace insert::correlate
