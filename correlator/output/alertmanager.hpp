// The Prometheus Alertmanager's alerts (API v2, POST /api/v2/alerts): what one alert
// carries, made from the correlator's security alerts and congestion episodes, the JSON
// body of a POST, and the --alertmanager URL. Delivery (queue, retries, re-sending firing
// alerts) is alert_delivery.hpp's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

// One Alertmanager alert. Its label set is its identity there (the fingerprint): labels
// are stable for one alert (kind, severity, victim, source, node) and everything that
// changes while it fires (counts, evidence, the record) is an annotation.
struct AmAlert {
    using Pairs = std::vector<std::pair<std::string, std::string>>;
    Pairs labels;  // in a fixed order, alertname first; empty values are dropped there
    Pairs annotations;
    int64_t starts_at_ns = 0;   // ns since the epoch (UTC)
    int64_t ends_at_ns = 0;     // 0: none - firing until the Alertmanager's resolve_timeout
    std::string generator_url;  // empty: none

    // The label set as one string: the key of an alert kept firing.
    std::string identity() const;
};

// A security alert (docs/correlation.md 8): alertname insert_<kind>, kind, severity,
// victim_ip victim_qpn victim_pid victim_comm victim_cgroup source_ip source_pid;
// annotations summary and record (the `alert` record); startsAt its t_ns, no endsAt.
AmAlert alertmanager_alert(const Alert& alert);

// A congestion episode (docs/correlation.md 9): alertname insert_congestion, kind
// congestion, severity warning, node; annotations summary, victims, contributors and
// record (the `congestion` record); startsAt its t_start_ns; endsAt its t_end_ns when
// `closed`, none while it is open (firing).
AmAlert alertmanager_alert(const CongestionEpisode& episode, bool closed);

// ns since the epoch as RFC 3339 in UTC with nanoseconds: 2023-11-14T22:13:20.123456789Z.
std::string rfc3339(int64_t ns);

// The body of one POST: a JSON array of the alerts.
std::string alertmanager_body(const std::vector<AmAlert>& alerts);
std::string alertmanager_body(const std::vector<Alert>& alerts);

// `url`: http[s]://[USER:PASSWORD@]HOST[:PORT][/PREFIX] (HOST a name, an IPv4 address or an
// IPv6 one in brackets; PORT by default 80 or 443). False with `error` naming the option
// when it is malformed.
bool parse_alertmanager_url(const std::string& url, std::string& host, std::string& port,
                            std::string& prefix, std::string& error);

// The URL without its user and password, for log lines: http://HOST:PORT/PREFIX.
std::string alertmanager_display_url(const std::string& url);

// Where alerts are POSTed: the URL without trailing slashes, then /api/v2/alerts.
std::string alertmanager_endpoint(const std::string& url);

}  // namespace insert::correlate
