#include "correlator/output/alertmanager.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include "correlator/output/episode_text.hpp"
#include "correlator/output/record_writer.hpp"
#include "correlator/usecases/origin.hpp"
#include "dataplane/common/json_line.hpp"
#include "dataplane/common/qpn_text.hpp"

namespace insert::correlate {

namespace {

// How many victims and contributors an episode's annotations name (the record has all).
constexpr std::size_t kAppsNamed = 8;

std::string owner_text(const QpOwner& o) {
    return o.traced ? std::string(o.comm.view()) + "[" + std::to_string(o.pid) + "]@" + o.host
                    : std::string("untraced");
}

std::string app_text(const AppRef& a) {
    return a.owner.traced ? owner_text(a.owner) + " (" + a.ip.to_string() + ")"
                          : a.ip.to_string() + " (untraced)";
}

std::string apps_text(const CongestionEpisode& e, const std::vector<EpisodeApp>& apps,
                      bool victims) {
    std::string text;
    for (std::size_t i = 0; i < apps.size() && i < kAppsNamed; ++i) {
        const EpisodeApp& a = apps[i];
        if (i) text += ", ";
        text += app_text(a.app);
        text += ": ";
        text += victims ? victim_effect(e, a) : contributor_part(a);
    }
    if (apps.size() > kAppsNamed)
        text += ", and " + std::to_string(apps.size() - kAppsNamed) + " more";
    return text.empty() ? "none" : text;
}

std::string without_newline(std::string record) {
    if (!record.empty() && record.back() == '\n') record.pop_back();
    return record;
}

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// The URL's parts; false when it is not http[s]://[USERINFO@]HOST[:PORT][/PREFIX].
bool split_url(const std::string& url, std::string& scheme, std::string& host, std::string& port,
               std::string& prefix) {
    const std::size_t sep = url.find("://");
    if (sep == std::string::npos) return false;
    scheme = lower(url.substr(0, sep));
    if (scheme != "http" && scheme != "https") return false;
    const std::string rest = url.substr(sep + 3);
    if (rest.find_first_of("?# \t\r\n") != std::string::npos) return false;
    const std::size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    prefix = slash == std::string::npos ? "" : rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    if (const std::size_t at = authority.rfind('@'); at != std::string::npos)
        authority.erase(0, at + 1);
    std::size_t colon = std::string::npos;
    if (!authority.empty() && authority.front() == '[') {  // [IPv6]:PORT
        const std::size_t close = authority.find(']');
        if (close == std::string::npos) return false;
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') return false;
            colon = close + 1;
        }
    } else {
        colon = authority.rfind(':');
    }
    host = authority.substr(0, colon);
    port = colon == std::string::npos ? (scheme == "https" ? "443" : "80")
                                      : authority.substr(colon + 1);
    if (host.empty() || host == "[]" || port.empty() || port.size() > 5 ||
        port.find_first_not_of("0123456789") != std::string::npos)
        return false;
    const long number = std::stol(port);
    return number >= 1 && number <= 65535;
}

}  // namespace

std::string AmAlert::identity() const {
    std::string key;
    for (const auto& [name, value] : labels) {
        if (value.empty()) continue;  // as the Alertmanager drops them
        key += name;
        key += '\0';
        key += value;
        key += '\0';
    }
    return key;
}

AmAlert alertmanager_alert(const Alert& a) {
    const Offence& o = a.first;
    const std::string kind(alert_kind_name(a.kind));
    AmAlert am;
    am.labels = {
        {"alertname", "insert_" + kind},
        {"kind", kind},
        {"severity", std::string(alert_severity(a.kind))},
        {"victim_ip", o.victim_ip.to_string()},
        {"victim_qpn", std::to_string(o.victim_qpn)},
        {"victim_pid", o.victim.traced ? std::to_string(o.victim.pid) : ""},
        {"victim_comm", std::string(o.victim.comm.view())},
        {"victim_cgroup", o.victim.traced ? std::to_string(o.victim.cgroup) : ""},
        {"source_ip", o.source_ip.to_string()},
        {"source_pid", o.source.traced ? std::to_string(o.source.pid) : ""},
    };
    std::string record;
    append_alert(record, a);
    std::string summary = kind + ": " + std::to_string(a.count) + " message(s) from " +
                          (o.claimed ? "claimed source " : "") + o.source_ip.to_string() + " (" +
                          owner_text(o.source) + (o.claimed ? ", possibly spoofed" : "") +
                          ") to QP " + qpn_text(o.victim_qpn) + " of " + o.victim_ip.to_string() +
                          " (" + owner_text(o.victim) + ")";
    // Where the packet came from (docs/correlation.md 8): in the summary people read.
    if (wants_origin(a.kind) && o.origin.seen.known)
        summary += "; " + origin_sentence(o.origin, o.source_ip.to_string());
    am.annotations = {
        {"summary", std::move(summary)},
        {"record", without_newline(std::move(record))},
    };
    am.starts_at_ns = a.t_ns;
    return am;
}

AmAlert alertmanager_alert(const CongestionEpisode& e, bool closed) {
    AmAlert am;
    am.labels = {
        {"alertname", "insert_congestion"},
        {"kind", "congestion"},
        {"severity", "warning"},
        {"node", e.node},
    };
    std::string record;
    append_congestion(record, e);
    am.annotations = {
        {"summary", "congestion at " + e.node + ": " + std::to_string(e.msgs) + " messages from " +
                        std::to_string(e.contributors.size()) +
                        " application(s), p99 network latency " + duration_text(e.p99_net_ns) +
                        " (baseline " + duration_text(e.baseline_net_ns) + "); CNPs " +
                        std::to_string(e.cnps) + ", ECN-CE " + std::to_string(e.ecn_ce) +
                        ", retransmitted packets " + std::to_string(e.retx_pkts) + ", NAKs " +
                        std::to_string(e.naks)},
        {"victims", apps_text(e, e.victims, true)},
        {"contributors", apps_text(e, e.contributors, false)},
        {"record", without_newline(std::move(record))},
    };
    am.starts_at_ns = e.t_start_ns;
    am.ends_at_ns = closed ? std::max(e.t_end_ns, e.t_start_ns) : 0;
    return am;
}

std::string rfc3339(int64_t ns) {
    // Floor division: a time before 1970 still has its fraction in [0, 1 s).
    int64_t s = ns / 1'000'000'000;
    int64_t frac = ns % 1'000'000'000;
    if (frac < 0) frac += 1'000'000'000, --s;
    const time_t t = static_cast<time_t>(s);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(text + n, sizeof text - n, ".%09lldZ", static_cast<long long>(frac));
    return text;
}

std::string alertmanager_body(const std::vector<AmAlert>& alerts) {
    std::string body = "[";
    for (std::size_t i = 0; i < alerts.size(); ++i) {
        const AmAlert& a = alerts[i];
        std::string labels, annotations;
        {
            JsonLine l(labels);
            for (const auto& [name, value] : a.labels) l.s(name, value);
            l.close();
            JsonLine an(annotations);
            for (const auto& [name, value] : a.annotations) an.s(name, value);
            an.close();
        }
        if (i) body += ',';
        JsonLine entry(body);
        entry.raw("labels", labels).raw("annotations", annotations);
        entry.s("startsAt", rfc3339(a.starts_at_ns));
        if (a.ends_at_ns != 0) entry.s("endsAt", rfc3339(a.ends_at_ns));
        if (!a.generator_url.empty()) entry.s("generatorURL", a.generator_url);
        entry.close();
    }
    body += ']';
    return body;
}

std::string alertmanager_body(const std::vector<Alert>& alerts) {
    std::vector<AmAlert> am;
    am.reserve(alerts.size());
    for (const Alert& a : alerts) am.push_back(alertmanager_alert(a));
    return alertmanager_body(am);
}

bool parse_alertmanager_url(const std::string& url, std::string& host, std::string& port,
                            std::string& prefix, std::string& error) {
    std::string scheme;
    if (!split_url(url, scheme, host, port, prefix)) {
        error = "--alertmanager " + url + ": expected http[s]://HOST[:PORT][/PREFIX]";
        return false;
    }
    return true;
}

std::string alertmanager_display_url(const std::string& url) {
    std::string scheme, host, port, prefix;
    if (!split_url(url, scheme, host, port, prefix)) return url;
    return scheme + "://" + host + ":" + port + prefix;
}

std::string alertmanager_endpoint(const std::string& url) {
    std::string base = url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/api/v2/alerts";
}

}  // namespace insert::correlate
