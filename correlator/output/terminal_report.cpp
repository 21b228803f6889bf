#include "correlator/output/terminal_report.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace insert::correlate {

namespace {

std::string us(std::optional<int64_t> ns) {
    return ns ? fmt::format("{:.1f}", static_cast<double>(*ns) / 1000.0) : std::string("-");
}

std::string p50_p99(const PartStats& part) {
    return us(part.percentile(50)) + "/" + us(part.percentile(99));
}

// How many applications the table shows; the records have all of them.
constexpr std::size_t kTopApps = 15;

}  // namespace

std::string terminal_report(const RunReport& r) {
    const IngestCounts& c = *r.counts;
    const JoinCounts& j = *r.join;
    const Views& v = *r.views;
    std::string out;
    out += fmt::format(
        "insert-correlate: {} lines in {:.2f} s ({:.2f} M lines/s): {} msg, {} qp, {} host "
        "records, {} ignored, {} bad\n",
        c.lines, r.wall_s, r.wall_s > 0 ? static_cast<double>(c.lines) / r.wall_s / 1e6 : 0.0,
        c.msg, c.qp, c.host, c.ignored, c.bad());
    uint64_t resync = 0;
    for (const E2eRow& row : v.e2e) resync += row.resync;
    out += fmt::format(
        "joined: {} messages to work requests ({} after resynchronisation) over {} host QPs; "
        "unmatched: {} work requests, {} wire-only messages; {} messages from untraced QPs, "
        "{} from untraced hosts\n",
        v.e2e.size(), resync, r.qps, j.unmatched_wr, j.wire_only, j.src_untraced,
        j.src_host_untraced);
    for (const auto& [host, clock] : r.clocks) {
        out += fmt::format("clock {}: offset {} ns ({}", host.empty() ? "\"\"" : host, clock.offset,
                           clock_source_name(clock.source));
        if (clock.bounds.has_lo || clock.bounds.has_hi)
            out += fmt::format(", bounds [{}, {}] from {} messages",
                               clock.bounds.has_lo ? std::to_string(clock.bounds.lo) : "-",
                               clock.bounds.has_hi ? std::to_string(clock.bounds.hi) : "-",
                               clock.bounds.matches);
        out += clock.consistent ? ")\n" : "; INCONSISTENT: the bounds do not intersect)\n";
    }
    if (v.apps.empty()) return out;
    std::vector<const AppView*> apps;
    for (const AppView& a : v.apps) apps.push_back(&a);
    const auto total = [](const AppView* a) {
        uint64_t n = 0;
        for (uint64_t m : a->msgs) n += m;
        return n;
    };
    std::stable_sort(apps.begin(), apps.end(),
                     [&](const AppView* a, const AppView* b) { return total(a) > total(b); });
    out += fmt::format("{:<14} {:<16} {:>7} {:<15} {:>9} {:>15} {:>15} {:>15} {:>15}\n", "host",
                       "ip", "pid", "comm", "msgs", "host us p50/99", "net us p50/99",
                       "compl us p50/99", "total us p50/99");
    for (std::size_t i = 0; i < apps.size() && i < kTopApps; ++i) {
        const AppView& a = *apps[i];
        out += fmt::format("{:<14} {:<16} {:>7} {:<15} {:>9} {:>15} {:>15} {:>15} {:>15}\n",
                           a.host.substr(0, 14), a.ip.to_string(), a.pid, a.comm.view(), total(&a),
                           p50_p99(a.host_ns), p50_p99(a.net_ns), p50_p99(a.completion_ns),
                           p50_p99(a.total_ns));
    }
    if (apps.size() > kTopApps)
        out += fmt::format("... and {} more applications (see the app records)\n",
                           apps.size() - kTopApps);
    return out;
}

}  // namespace insert::correlate
