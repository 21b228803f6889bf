#include "correlator/run/live_outputs.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "correlator/output/terminal_report.hpp"

namespace insert::correlate {

// Alerts and congestion episodes are told as they are decided (docs/correlation.md 8, 9):
// on stderr (unless --quiet) and to Alertmanager - fired as soon as they exist, resolved
// when they end. A security alert that ended is left to expire four resend intervals
// after its last report (as Prometheus does), so that the Alertmanager notifies it even
// when the attack was over before its group_wait; an episode ends at its t_end_ns.
void tell_as_decided(LiveSettings& settings, const CorrelateOptions& options,
                     std::optional<AlertmanagerClient>& alertmanager) {
    const bool log = !options.quiet;
    const double resend_s = options.alertmanager.resend_s;
    settings.on_alert_opened = [&alertmanager, log](const Alert& a) {
        if (log) std::fprintf(stderr, "insert-correlate: %s (firing)\n", alert_line(a).c_str());
        if (alertmanager) alertmanager->fire(alertmanager_alert(a));
    };
    settings.on_alert_closed = [&alertmanager, resend_s](const Alert& a) {
        if (!alertmanager) return;
        AmAlert am = alertmanager_alert(a);
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        am.ends_at_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() +
                        static_cast<int64_t>(4 * resend_s * 1e9);
        alertmanager->resolve(std::move(am));
    };
    settings.on_episode_opened = [&alertmanager, log](const CongestionEpisode& e) {
        if (log) std::fprintf(stderr, "insert-correlate: %s", episode_lines(e).c_str());
        if (alertmanager) alertmanager->fire(alertmanager_alert(e, false));
    };
    settings.on_episode_closed = [&alertmanager](const CongestionEpisode& e) {
        if (alertmanager) alertmanager->resolve(alertmanager_alert(e, true));
    };
}

// SIGHUP: the records written so far go to the file open until now, the next ones to a
// file opened anew at the same path (logrotate moved the old one: `create` or
// `nocreate`, then `postrotate` sends the HUP). --html is written at the end anyway.
void reopen_records(const CorrelateOptions& options, RecordSink& sink, OutputStream& out) {
    std::string error;
    if (options.records.empty() || out.to_stdout()) {
        std::fprintf(stderr, "insert-correlate: SIGHUP: no --records file to reopen\n");
        return;
    }
    sink.flush();
    if (out.reopen(error))
        std::fprintf(stderr, "insert-correlate: SIGHUP: --records %s reopened\n",
                     options.records.c_str());
    else
        std::fprintf(stderr,
                     "insert-correlate: SIGHUP: --records %s: cannot reopen (%s); the records "
                     "go on to the file open before\n",
                     options.records.c_str(), error.c_str());
}

}  // namespace insert::correlate
