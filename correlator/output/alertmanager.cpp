#include "correlator/output/alertmanager.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "dataplane/common/json_line.hpp"
#include "correlator/output/record_writer.hpp"

namespace insert::correlate {

namespace {

constexpr std::size_t kBatch = 500;  // alerts per request

// RFC 3339 with nanoseconds, UTC, from ns since the epoch.
std::string rfc3339(int64_t ns) {
    const time_t s = static_cast<time_t>(ns / 1'000'000'000);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    char frac[16];
    std::snprintf(frac, sizeof frac, ".%09lldZ", static_cast<long long>(ns % 1'000'000'000));
    return std::string(text, n) + frac;
}

std::string owner_text(const QpOwner& o) {
    return o.traced ? std::string(o.comm.view()) + "[" + std::to_string(o.pid) + "]@" + o.host
                    : std::string("untraced");
}

class Socket {
  public:
    ~Socket() {
        if (fd >= 0) ::close(fd);
    }
    int fd = -1;
};

bool http_post(const std::string& host, const std::string& port, const std::string& path,
               const std::string& body, std::string& error) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
        error = host + ": " + gai_strerror(rc);
        return false;
    }
    Socket s;
    for (addrinfo* a = res; a && s.fd < 0; a = a->ai_next) {
        s.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (s.fd < 0) continue;
        timeval tv{5, 0};  // an unresponsive Alertmanager must not hang the run
        setsockopt(s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
            error = host + ":" + port + ": " + std::strerror(errno);
            ::close(s.fd);
            s.fd = -1;
        }
    }
    freeaddrinfo(res);
    if (s.fd < 0) return false;
    const std::string request =
        "POST " + path + " HTTP/1.1\r\nHost: " + host + ":" + port +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n\r\n" + body;
    for (std::size_t sent = 0; sent < request.size();) {
        const ssize_t n = ::send(s.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            error = host + ":" + port + ": " + std::strerror(errno);
            return false;
        }
        sent += static_cast<std::size_t>(n);
    }
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(s.fd, buf, sizeof buf, 0)) > 0;)
        reply.append(buf, static_cast<std::size_t>(n));
    // "HTTP/1.1 200 OK"
    const auto space = reply.find(' ');
    if (space == std::string::npos || reply.compare(space + 1, 1, "2") != 0) {
        error = host + ":" + port + path + ": " +
                (reply.empty() ? std::string("no reply") : reply.substr(0, reply.find('\r')));
        return false;
    }
    return true;
}

}  // namespace

bool parse_alertmanager_url(const std::string& url, std::string& host, std::string& port,
                            std::string& prefix, std::string& error) {
    const std::string scheme = "http://";
    if (url.compare(0, scheme.size(), scheme) != 0) {
        error = "--alertmanager " + url + ": expected http://HOST:PORT[/PREFIX]";
        return false;
    }
    const std::string rest = url.substr(scheme.size());
    const auto slash = rest.find('/');
    const std::string authority = rest.substr(0, slash);
    prefix = slash == std::string::npos ? "" : rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    const auto colon = authority.rfind(':');
    host = authority.substr(0, colon);
    port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
    if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
        error = "--alertmanager " + url + ": expected http://HOST:PORT[/PREFIX]";
        return false;
    }
    return true;
}

std::string alertmanager_body(const std::vector<Alert>& alerts) {
    std::string body = "[";
    for (std::size_t i = 0; i < alerts.size(); ++i) {
        const Alert& a = alerts[i];
        const Offence& o = a.first;
        std::string labels, annotations, record;
        JsonLine l(labels);
        l.s("alertname", "insert_" + std::string(alert_kind_name(a.kind)))
            .s("kind", alert_kind_name(a.kind))
            .s("severity", alert_severity(a.kind))
            .s("victim_ip", o.victim_ip.to_string())
            .s("victim_qpn", std::to_string(o.victim_qpn))
            .s("victim_pid", o.victim.traced ? std::to_string(o.victim.pid) : "")
            .s("victim_comm", std::string(o.victim.comm.view()))
            .s("victim_cgroup", o.victim.traced ? std::to_string(o.victim.cgroup) : "")
            .s("source_ip", o.source_ip.to_string())
            .s("source_pid", o.source.traced ? std::to_string(o.source.pid) : "");
        l.close();
        append_alert(record, a);
        if (!record.empty() && record.back() == '\n') record.pop_back();
        JsonLine an(annotations);
        an.s("summary", std::string(alert_kind_name(a.kind)) + ": " + std::to_string(a.count) +
                            " message(s) from " + o.source_ip.to_string() + " (" +
                            owner_text(o.source) + ") to QP " + std::to_string(o.victim_qpn) +
                            " of " + o.victim_ip.to_string() + " (" + owner_text(o.victim) + ")")
            .s("record", record);
        an.close();
        JsonLine entry(body);
        entry.raw("labels", labels).raw("annotations", annotations).s("startsAt", rfc3339(a.t_ns));
        entry.close();
        if (i + 1 < alerts.size()) body += ',';
    }
    body += ']';
    return body;
}

bool post_alerts(const std::string& url, const std::vector<Alert>& alerts, std::string& error) {
    std::string host, port, prefix;
    if (!parse_alertmanager_url(url, host, port, prefix, error)) return false;
    for (std::size_t i = 0; i < alerts.size(); i += kBatch) {
        const std::vector<Alert> part(
            alerts.begin() + static_cast<long>(i),
            alerts.begin() + static_cast<long>(std::min(alerts.size(), i + kBatch)));
        if (!http_post(host, port, prefix + "/api/v2/alerts", alertmanager_body(part), error))
            return false;
    }
    return true;
}

}  // namespace insert::correlate
