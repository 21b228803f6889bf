#include "correlator/output/terminal_report.hpp"

#include "correlator/output/episode_text.hpp"
#include "correlator/usecases/origin.hpp"
#include "dataplane/common/qpn_text.hpp"

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
constexpr std::size_t kTopAlerts = 20;

}  // namespace

std::string terminal_text(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        // C0 controls and DEL, and C1 controls as UTF-8 (U+0080-U+009F: 0xC2 0x80-0x9F).
        const bool c1 = c == 0xC2 && i + 1 < name.size() &&
                        (static_cast<unsigned char>(name[i + 1]) & 0xE0) == 0x80;
        if (c < 0x20 || c == 0x7F || c1) {
            out += fmt::format("\\x{:02x}", c);
            if (c1) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(name[++i]));
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string alert_line(const Alert& a) {
    const auto who = [](const QpOwner& o) {
        return o.traced ? fmt::format("{}[{}]@{}", terminal_text(o.comm.view()), o.pid,
                                      terminal_text(o.host))
                        : std::string("untraced");
    };
    const Offence& o = a.first;
    // A source only claimed is said so: the address may be another's (SPEC 10 v1.3); where
    // the packet came from says more (docs/correlation.md 8).
    std::string line =
        fmt::format("ALERT {} ({}) x{}: victim {} QP {} {}; {} {} {}{}", alert_kind_name(a.kind),
                    alert_severity(a.kind), a.count, o.victim_ip.to_string(),
                    qpn_text(o.victim_qpn), who(o.victim), o.claimed ? "claimed source" : "source",
                    o.source_ip.to_string(), who(o.source), o.claimed ? " (possibly spoofed)" : "");
    if (wants_origin(a.kind) && o.origin.seen.known)
        line += "; " + origin_sentence(o.origin, o.source_ip.to_string());
    return line;
}

std::string episode_lines(const CongestionEpisode& e) {
    std::string out = fmt::format(
        "CONGESTION toward {} for {:.1f} ms: p99 net {:.1f} us (baseline {:.1f}), {} CNPs, {} "
        "ECN-CE, {} retransmitted packets\n",
        terminal_text(e.node), static_cast<double>(e.t_end_ns - e.t_start_ns) / 1e6,
        static_cast<double>(e.p99_net_ns) / 1e3, static_cast<double>(e.baseline_net_ns) / 1e3,
        e.cnps, e.ecn_ce, e.retx_pkts);
    const auto name = [](const EpisodeApp& a) {
        return a.app.owner.traced
                   ? fmt::format("{}[{}]@{} ({})", terminal_text(a.app.owner.comm.view()),
                                 a.app.owner.pid, terminal_text(a.app.owner.host),
                                 a.app.ip.to_string())
                   : a.app.ip.to_string() + " (untraced)";
    };
    std::string contributors, victims;
    for (std::size_t k = 0; k < e.contributors.size() && k < 5; ++k)
        contributors += fmt::format("\n    {}: {}", name(e.contributors[k]),
                                    contributor_part(e.contributors[k]));
    for (std::size_t k = 0; k < e.victims.size() && k < 5; ++k)
        victims += fmt::format("\n    {}: {}", name(e.victims[k]), victim_effect(e, e.victims[k]));
    if (e.contributors.size() > 5)
        contributors += fmt::format("\n    and {} more", e.contributors.size() - 5);
    if (e.victims.size() > 5) victims += fmt::format("\n    and {} more", e.victims.size() - 5);
    if (victims.empty()) victims = " none";
    return out + "  contributors:" + contributors + "\n  victims:" + victims + "\n";
}

std::string terminal_report(const SummaryCounts& s, const AppAggregator& app_views,
                            const std::vector<std::pair<std::string, ClockEstimate>>& clocks,
                            const std::vector<Alert>& alerts,
                            const std::vector<CongestionEpisode>& episodes) {
    const IngestCounts& c = s.inputs;
    const JoinCounts& j = s.join;
    std::string out;
    out += fmt::format(
        "insert-correlate: {} lines in {:.2f} s ({:.2f} M lines/s): {} msg, {} qp, {} host "
        "records, {} ignored, {} bad\n",
        c.lines, s.wall_s, s.wall_s > 0 ? static_cast<double>(c.lines) / s.wall_s / 1e6 : 0.0,
        c.msg, c.qp, c.host, c.ignored, c.bad());
    out += fmt::format(
        "joined: {} messages to work requests ({} after resynchronisation) over {} host QPs; "
        "unmatched: {} work requests, {} wire-only messages; {} messages from untraced QPs, "
        "{} from untraced hosts\n",
        s.e2e, s.resync, s.qps, j.unmatched_wr, j.wire_only, j.src_untraced, j.src_host_untraced);
    if (s.late || s.evicted_wrs || s.evicted_msgs || s.evicted_completions)
        out += fmt::format(
            "live: {} late records; evicted after --ttl: {} work requests, {} messages, {} "
            "without their completion\n",
            s.late, s.evicted_wrs, s.evicted_msgs, s.evicted_completions);
    for (const auto& [host, clock] : clocks) {
        out +=
            fmt::format("clock {}: offset {} ns ({}", host.empty() ? "\"\"" : terminal_text(host),
                        clock.offset, clock_source_name(clock.source));
        if (clock.bounds.has_lo || clock.bounds.has_hi)
            out += fmt::format(", bounds [{}, {}] from {} messages",
                               clock.bounds.has_lo ? std::to_string(clock.bounds.lo) : "-",
                               clock.bounds.has_hi ? std::to_string(clock.bounds.hi) : "-",
                               clock.bounds.matches);
        out += clock.consistent ? ")\n" : "; INCONSISTENT: the bounds do not intersect)\n";
    }
    for (std::size_t i = 0; i < alerts.size() && i < kTopAlerts; ++i)
        out += alert_line(alerts[i]) + "\n";
    // A live run keeps only its first alerts: the summary counts them all.
    uint64_t all_alerts = 0;
    for (const uint64_t n : s.alerts) all_alerts += n;
    all_alerts = std::max<uint64_t>(all_alerts, alerts.size());
    const uint64_t shown = std::min<uint64_t>(alerts.size(), kTopAlerts);
    if (all_alerts > shown)
        out += fmt::format("... and {} more alerts (see the alert records)\n", all_alerts - shown);
    for (std::size_t i = 0; i < episodes.size() && i < kTopAlerts; ++i)
        out += episode_lines(episodes[i]);
    std::vector<const AppView*> apps = app_views.apps();
    if (apps.empty()) return out;
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
                           terminal_text(a.host).substr(0, 14), a.ip.to_string(), a.pid,
                           terminal_text(a.comm.view()), total(&a), p50_p99(a.host_ns),
                           p50_p99(a.net_ns), p50_p99(a.completion_ns), p50_p99(a.total_ns));
    }
    if (apps.size() > kTopApps)
        out += fmt::format("... and {} more applications (see the app records)\n",
                           apps.size() - kTopApps);
    return out;
}

}  // namespace insert::correlate
