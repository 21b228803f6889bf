// Delivers alerts to a Prometheus Alertmanager through its HTTP API (POST
// /api/v2/alerts, one JSON array per call). Plain HTTP/1.1 over TCP: the Alertmanager of
// an appliance sits on a management network or localhost, and this needs no HTTP library.
#pragma once

#include <string>
#include <vector>

#include "correlator/usecases/security.hpp"

namespace insert::correlate {

// `url`: http://HOST:PORT[/PREFIX]. False with `error` set when the URL is malformed.
bool parse_alertmanager_url(const std::string& url, std::string& host, std::string& port,
                            std::string& prefix, std::string& error);

// The Alertmanager API's body for these alerts: labels (alertname insert_<kind>, kind,
// severity, victim and source), annotations (summary, evidence), startsAt.
std::string alertmanager_body(const std::vector<Alert>& alerts);

// POSTs the alerts (in batches); false with `error` (naming the URL) on failure.
bool post_alerts(const std::string& url, const std::vector<Alert>& alerts, std::string& error);

}  // namespace insert::correlate
