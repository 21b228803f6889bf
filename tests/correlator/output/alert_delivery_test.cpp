// Alertmanager delivery (correlator/output/alert_delivery.hpp) against a tiny HTTP server
// in the test that answers from a script: retries with backoff on 5xx and 429, no retry
// on 400, a POST nobody answers timed out, a full queue dropping and counting, alerts kept
// firing until resolved, and a flush that gives up at its deadline. Attempts are counted,
// not timed: time bounds are only generous upper limits. And the alerts' JSON: labels,
// annotations, RFC 3339 times, the URL's forms.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/alertmanager.hpp"

namespace insert::correlate {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// An HTTP server on a free localhost port answering each POST with the next reply of its
// script (then `otherwise`), one connection at a time, each closed after its answer.
struct Reply {
    int status = 200;  // 0: read the request, never answer
    std::string body;
};

class FakeAlertmanager {
  public:
    explicit FakeAlertmanager(std::vector<Reply> script, Reply otherwise = {})
        : script_(std::move(script)), otherwise_(std::move(otherwise)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(fd_, 16) != 0 ||
            ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
            ::pipe2(stop_, O_CLOEXEC) != 0)
            throw std::runtime_error("fake Alertmanager: no socket");
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeAlertmanager() {
        (void)!::write(stop_[1], "x", 1);
        thread_.join();
        for (const int c : hung_) ::close(c);
        ::close(fd_);
        ::close(stop_[0]);
        ::close(stop_[1]);
    }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    // The bodies of the POSTs received so far, parsed.
    std::vector<json> bodies() const {
        std::lock_guard lock(mutex_);
        return bodies_;
    }
    std::size_t requests() const {
        std::lock_guard lock(mutex_);
        return bodies_.size();
    }
    // Waits until `pred(bodies)` holds (true) or 10 s passed (false).
    template <class Pred>
    bool wait_until(Pred pred) const {
        std::unique_lock lock(mutex_);
        return arrived_.wait_for(lock, 10s, [&] { return pred(bodies_); });
    }

  private:
    void serve() {
        for (std::size_t index = 0;; ++index) {
            pollfd p[2] = {{fd_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
            if (::poll(p, 2, -1) < 0 || p[1].revents) return;
            const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            timeval tv{5, 0};
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            const std::string body = read_request(c);
            const Reply& r = index < script_.size() ? script_[index] : otherwise_;
            {
                std::lock_guard lock(mutex_);
                bodies_.push_back(json::parse(body, nullptr, false));
            }
            arrived_.notify_all();
            if (r.status == 0) {
                hung_.push_back(c);
                continue;
            }
            const std::string reply =
                "HTTP/1.1 " + std::to_string(r.status) +
                " Scripted\r\nContent-Length: " + std::to_string(r.body.size()) +
                "\r\nConnection: close\r\n\r\n" + r.body;
            (void)!::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
            ::close(c);
        }
    }
    // The body of the request on `c` (headers, then Content-Length bytes).
    static std::string read_request(int c) {
        std::string in;
        char buf[4096];
        std::size_t end = std::string::npos, length = 0;
        while (end == std::string::npos || in.size() < end + 4 + length) {
            const ssize_t n = ::recv(c, buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, static_cast<std::size_t>(n));
            if (end == std::string::npos && (end = in.find("\r\n\r\n")) != std::string::npos) {
                std::string head = in.substr(0, end);
                for (char& ch : head) ch = static_cast<char>(std::tolower(ch));
                if (const auto at = head.find("content-length:"); at != std::string::npos)
                    length = std::stoul(head.substr(at + 15));
            }
        }
        return end == std::string::npos ? "" : in.substr(end + 4);
    }

    std::vector<Reply> script_;
    Reply otherwise_;
    int fd_ = -1;
    int stop_[2] = {-1, -1};
    int port_ = 0;
    std::vector<int> hung_;
    mutable std::mutex mutex_;
    mutable std::condition_variable arrived_;
    std::vector<json> bodies_;
    std::thread thread_;
};

// The client's log lines.
class Lines {
  public:
    std::function<void(const std::string&)> sink() {
        return [this](const std::string& line) {
            std::lock_guard lock(mutex_);
            lines_.push_back(line);
        };
    }
    std::vector<std::string> all() const {
        std::lock_guard lock(mutex_);
        return lines_;
    }
    std::size_t containing(const std::string& text) const {
        std::size_t n = 0;
        for (const std::string& l : all()) n += l.find(text) != std::string::npos;
        return n;
    }

  private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

AlertDeliveryOptions options(const std::string& url, Lines& lines) {
    AlertDeliveryOptions o;
    o.url = url;
    o.backoff_min_s = 0.01;
    o.backoff_max_s = 0.05;
    o.timeout_s = 5;
    o.log = lines.sink();
    return o;
}

AmAlert alert(const std::string& name, int64_t starts = 1'700'000'000'000'000'000) {
    AmAlert a;
    a.labels = {{"alertname", "insert_test"}, {"severity", "warning"}, {"victim_ip", name}};
    a.annotations = {{"summary", "test " + name}};
    a.starts_at_ns = starts;
    return a;
}

std::string label(const json& a, const std::string& name) {
    return a["labels"].value(name, std::string());
}

TEST(AlertDelivery, retries_5xx_until_accepted) {
    FakeAlertmanager am({{503, "busy"}, {503, "busy"}});
    Lines lines;
    AlertmanagerClient client(options(am.url(), lines));
    for (const char* n : {"10.0.0.1", "10.0.0.2", "10.0.0.3"})
        EXPECT_TRUE(client.enqueue(alert(n)));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));
    // Two POSTs refused, then every alert accepted, in order. The client's thread may take
    // the first alert before the others are queued: the batches are not fixed, the order is.
    const auto bodies = am.bodies();
    ASSERT_GE(bodies.size(), 3u);
    std::vector<std::string> accepted;
    for (std::size_t i = 2; i < bodies.size(); ++i)
        for (const json& a : bodies[i]) accepted.push_back(label(a, "victim_ip"));
    EXPECT_EQ(accepted, (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3"}));
    EXPECT_EQ(label(bodies[0][0], "victim_ip"), "10.0.0.1");
    const DeliveryCounts c = client.counts();
    EXPECT_EQ(c.sent, 3u);
    EXPECT_EQ(c.failed_posts, 2u);
    EXPECT_EQ(c.retries, 2u);
    EXPECT_EQ(c.rejected + c.dropped + c.queued, 0u);
    // Logged once (not per attempt), and the recovery.
    EXPECT_EQ(lines.containing("HTTP 503: busy, retrying"), 1u) << lines.all().size();
    EXPECT_EQ(lines.containing("reachable again (2 failed POSTs)"), 1u);
}

TEST(AlertDelivery, retries_429_and_backs_off_exponentially) {
    {
        FakeAlertmanager am({{429, "slow down"}});
        Lines lines;
        AlertmanagerClient client(options(am.url(), lines));
        client.enqueue(alert("10.0.0.1"));
        EXPECT_TRUE(client.flush(Clock::now() + 10s));
        EXPECT_EQ(am.requests(), 2u);
        EXPECT_EQ(client.counts().sent, 1u);
        EXPECT_EQ(client.counts().retries, 1u);
    }
    // Always 503, backoff from 20 ms doubling (each delay in [d/2, d]): within one second
    // 6 to 8 attempts; without a backoff there would be hundreds. Bounds kept generous.
    FakeAlertmanager am({}, {503, "down"});
    Lines lines;
    AlertDeliveryOptions o = options(am.url(), lines);
    o.backoff_min_s = 0.02;
    o.backoff_max_s = 10;
    AlertmanagerClient client(o);
    client.enqueue(alert("10.0.0.1"));
    client.enqueue(alert("10.0.0.2"));
    const auto start = Clock::now();
    EXPECT_FALSE(client.flush(start + 1s));
    EXPECT_LT(Clock::now() - start, 4s);
    const std::size_t attempts = am.requests();
    EXPECT_GE(attempts, 2u);  // a loaded machine may start few
    EXPECT_LE(attempts, 9u);
    const DeliveryCounts c = client.counts();
    // The POST under way at the deadline is aborted: it may have reached the server without
    // being counted as failed.
    EXPECT_LE(c.failed_posts, attempts);
    EXPECT_GE(c.failed_posts + 1, attempts);
    EXPECT_EQ(c.retries, attempts - 1);
    EXPECT_EQ(c.dropped, 2u);  // left at the deadline
    EXPECT_EQ(c.sent + c.queued, 0u);
    EXPECT_EQ(lines.containing("HTTP 503: down, retrying"), 1u);
    EXPECT_EQ(lines.containing("2 alert(s) not delivered to " + am.url() + " in time"), 1u);
}

TEST(AlertDelivery, rejects_4xx_once_without_retry) {
    FakeAlertmanager am({{400, "bad alert: start time must be before end time\nmore"}});
    Lines lines;
    AlertmanagerClient client(options(am.url(), lines));
    client.enqueue(alert("10.0.0.1"));
    client.enqueue(alert("10.0.0.2"));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));  // nothing left: given up
    EXPECT_EQ(am.requests(), 1u);
    DeliveryCounts c = client.counts();
    EXPECT_EQ(c.rejected, 2u);
    EXPECT_EQ(c.failed_posts, 1u);
    EXPECT_EQ(c.retries + c.sent + c.dropped, 0u);
    EXPECT_EQ(c.failed(), 2u);
    EXPECT_EQ(lines.containing("rejected 2 alert(s): HTTP 400: bad alert: start time must be "
                               "before end time (not retried)"),
              1u);
    EXPECT_EQ(lines.containing("more"), 0u);  // the reply's first line only
    // The next POST is accepted.
    client.enqueue(alert("10.0.0.3"));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));
    EXPECT_EQ(client.counts().sent, 1u);
}

TEST(AlertDelivery, times_out_a_post_nobody_answers_and_drops_at_the_deadline) {
    FakeAlertmanager am({}, {0, ""});
    Lines lines;
    AlertDeliveryOptions o = options(am.url(), lines);
    o.timeout_s = 0.2;
    AlertmanagerClient client(o);
    client.enqueue(alert("10.0.0.1"));
    client.enqueue(alert("10.0.0.2"));
    const auto start = Clock::now();
    EXPECT_FALSE(client.flush(start + 2s));
    EXPECT_LT(Clock::now() - start, 4s);  // a POST under way is aborted at the deadline
    const DeliveryCounts c = client.counts();
    EXPECT_GE(am.requests(), 2u);
    EXPECT_GE(c.failed_posts, 2u);
    EXPECT_EQ(c.dropped, 2u);
    EXPECT_EQ(c.sent + c.queued, 0u);
    EXPECT_EQ(lines.containing("unreachable ("), 2u);  // the retrying line, the last error
    EXPECT_EQ(lines.containing(", retrying"), 1u);
    EXPECT_EQ(lines.containing("timed out"), 2u);
}

TEST(AlertDelivery, full_queue_drops_and_counts) {
    FakeAlertmanager am({}, {0, ""});  // the first POST hangs: nothing drains
    Lines lines;
    AlertDeliveryOptions o = options(am.url(), lines);
    o.queue_limit = 3;
    auto client = std::make_unique<AlertmanagerClient>(o);
    std::size_t admitted = 0;
    for (int i = 0; i < 10; ++i) admitted += client->enqueue(alert("10.0.0." + std::to_string(i)));
    EXPECT_EQ(admitted, 3u);  // queued and in the POST count alike
    DeliveryCounts c = client->counts();
    EXPECT_EQ(c.dropped, 7u);
    EXPECT_EQ(c.queued, 3u);
    EXPECT_EQ(lines.containing("queue full (3 alerts waiting"), 1u);  // once per interval
    // Stopping aborts the hanging POST and says what was lost.
    const auto start = Clock::now();
    client.reset();
    EXPECT_LT(Clock::now() - start, 3s);
    EXPECT_EQ(lines.containing("3 alert(s) not delivered to " + am.url() + " (stopped"), 1u);
}

TEST(AlertDelivery, keeps_firing_alerts_until_resolved) {
    FakeAlertmanager am({});
    Lines lines;
    AlertDeliveryOptions o = options(am.url(), lines);
    o.resend_s = 0.1;
    AlertmanagerClient client(o);
    const auto sends_of = [](const std::vector<json>& bodies, const std::string& summary) {
        std::vector<json> found;
        for (const json& b : bodies)
            for (const json& a : b)
                if (a["annotations"].value("summary", "") == summary) found.push_back(a);
        return found;
    };
    AmAlert a = alert("10.0.0.1");
    EXPECT_TRUE(client.fire(a));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));  // its first send
    EXPECT_EQ(client.counts().firing, 1u);
    // Re-sent while firing, each time with endsAt ahead (4 re-send intervals).
    EXPECT_TRUE(
        am.wait_until([&](const auto& b) { return sends_of(b, "test 10.0.0.1").size() >= 3; }));
    for (const json& s : sends_of(am.bodies(), "test 10.0.0.1")) {
        EXPECT_EQ(s["startsAt"], "2023-11-14T22:13:20.000000000Z");
        EXPECT_TRUE(s.contains("endsAt")) << s;
    }
    // The same again changes nothing; an update (the same labels, new annotations) is sent
    // at once and then re-sent.
    EXPECT_TRUE(client.fire(a));
    a.annotations = {{"summary", "test 10.0.0.1, count 2"}};
    EXPECT_TRUE(client.fire(a));
    EXPECT_TRUE(am.wait_until(
        [&](const auto& b) { return sends_of(b, "test 10.0.0.1, count 2").size() >= 2; }));
    EXPECT_EQ(client.counts().firing, 1u);
    // Resolved: sent once with its endsAt, then no more.
    a.ends_at_ns = 1'700'000'001'500'000'000;
    EXPECT_TRUE(client.resolve(a));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));
    EXPECT_EQ(client.counts().firing, 0u);
    auto sends = sends_of(am.bodies(), "test 10.0.0.1, count 2");
    ASSERT_FALSE(sends.empty());
    EXPECT_EQ(sends.back()["endsAt"], "2023-11-14T22:13:21.500000000Z");
    const std::size_t after = am.requests();
    std::this_thread::sleep_for(400ms);  // four re-send intervals: none comes
    EXPECT_EQ(am.requests(), after);
    // An alert resolved that never fired is sent once, resolved.
    AmAlert b = alert("10.0.0.2");
    b.ends_at_ns = b.starts_at_ns + 1;
    EXPECT_TRUE(client.resolve(b));
    EXPECT_TRUE(client.flush(Clock::now() + 10s));
    EXPECT_EQ(sends_of(am.bodies(), "test 10.0.0.2").size(), 1u);
    EXPECT_EQ(client.counts().rejected + client.counts().dropped, 0u);
}

TEST(AlertDelivery, unreachable_is_logged_once_and_retried) {
    // A port where nothing listens: bound, then closed.
    int port = 0;
    {
        FakeAlertmanager gone({});
        port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
    }
    Lines lines;
    AlertDeliveryOptions o = options("http://user:secret@127.0.0.1:" + std::to_string(port), lines);
    AlertmanagerClient client(o);
    client.enqueue(alert("10.0.0.1"));
    EXPECT_FALSE(client.flush(Clock::now() + 2s));  // room for retries on a loaded machine
    EXPECT_GE(client.counts().retries, 2u);
    const std::vector<std::string> all = lines.all();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].rfind("http://127.0.0.1:" + std::to_string(port) + " unreachable (", 0), 0u)
        << all[0];
    EXPECT_NE(all[0].find("refused"), std::string::npos) << all[0];
    EXPECT_NE(all[0].find(", retrying (1 alert(s) queued)"), std::string::npos) << all[0];
    EXPECT_EQ(lines.containing("secret"), 0u);  // credentials never logged
}

TEST(AlertmanagerFormat, security_alert_and_congestion_episode) {
    Alert s;
    s.kind = AlertKind::peer_mismatch;
    s.t_ns = 1'700'000'000'123'456'789;
    s.count = 4;
    s.first.victim_ip = *Ip::parse("10.0.0.2");
    s.first.victim_qpn = 50;
    s.first.victim.traced = true;
    s.first.victim.pid = 300;
    s.first.victim.cgroup = 9;
    s.first.source_ip = *Ip::parse("10.0.0.9");
    const AmAlert am = alertmanager_alert(s);
    EXPECT_EQ(am.labels.front(),
              (std::pair<std::string, std::string>{"alertname", "insert_peer_mismatch"}));
    EXPECT_EQ(am.ends_at_ns, 0);
    const json body = json::parse(alertmanager_body(std::vector<AmAlert>{am}));
    ASSERT_EQ(body.size(), 1u);
    EXPECT_EQ(body[0]["labels"]["severity"], "critical");
    EXPECT_EQ(body[0]["labels"]["victim_pid"], "300");
    EXPECT_EQ(body[0]["labels"]["source_pid"], "");  // untraced: the Alertmanager drops it
    EXPECT_EQ(body[0]["startsAt"], "2023-11-14T22:13:20.123456789Z");
    EXPECT_FALSE(body[0].contains("endsAt"));
    EXPECT_EQ(json::parse(body[0]["annotations"]["record"].get<std::string>())["count"], 4);
    EXPECT_EQ(body[0]["annotations"]["summary"].get<std::string>().rfind("peer_mismatch: 4 ", 0),
              0u);

    CongestionEpisode e;
    e.node = "hB";
    e.dst_ips = {*Ip::parse("10.0.0.2")};
    e.t_start_ns = 1'700'000'000'400'000'000;
    e.t_end_ns = 1'700'000'000'430'000'000;
    e.msgs = 40;
    e.p99_net_ns = 210'000;
    e.baseline_net_ns = 5'000;
    EpisodeApp v;
    v.app.ip = *Ip::parse("10.0.0.3");
    v.app.owner.traced = true;
    v.app.owner.pid = 500;
    v.app.owner.host = "hC";
    v.msgs = 20;
    v.bytes_share = 0.25;
    v.net_ns_mean = 4'150'000;
    v.net_ns_p99 = 5'000'000;
    v.baseline_net_ns_mean = 50'000;
    v.baseline_net_ns_p99 = 80'000;
    v.victim = true;
    e.victims = {v};
    e.contributors = {v};
    const json open = json::parse(alertmanager_body({alertmanager_alert(e, false)}))[0];
    const json closed = json::parse(alertmanager_body({alertmanager_alert(e, true)}))[0];
    EXPECT_EQ(open["labels"], (json{{"alertname", "insert_congestion"},
                                    {"kind", "congestion"},
                                    {"severity", "warning"},
                                    {"node", "hB"}}));
    EXPECT_EQ(open["labels"], closed["labels"]);  // one identity, open or closed
    EXPECT_EQ(open["startsAt"], "2023-11-14T22:13:20.400000000Z");
    EXPECT_FALSE(open.contains("endsAt"));
    EXPECT_EQ(closed["endsAt"], "2023-11-14T22:13:20.430000000Z");
    EXPECT_EQ(closed["annotations"]["victims"],
              "[500]@hC (10.0.0.3): +4.10 ms per message (p99 +4.92 ms) over its usual 50.0 us, "
              "20 msgs; also sends 25.0% of the bytes");
    EXPECT_EQ(closed["annotations"]["contributors"],
              "[500]@hC (10.0.0.3): 25.0% of the bytes (0 B, 20 msgs); also a victim");
    EXPECT_EQ(json::parse(closed["annotations"]["record"].get<std::string>())["where"]["node"],
              "hB");
    EXPECT_EQ(alertmanager_alert(e, true).identity(), alertmanager_alert(e, false).identity());
    EXPECT_EQ(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
}

TEST(AlertmanagerFormat, url_forms) {
    std::string host, port, prefix, error;
    EXPECT_TRUE(parse_alertmanager_url("http://127.0.0.1:9093", host, port, prefix, error));
    EXPECT_EQ(host + " " + port + " [" + prefix + "]", "127.0.0.1 9093 []");
    EXPECT_TRUE(
        parse_alertmanager_url("https://am.example/alertmanager/", host, port, prefix, error));
    EXPECT_EQ(host + " " + port + " [" + prefix + "]", "am.example 443 [/alertmanager]");
    EXPECT_TRUE(parse_alertmanager_url("http://[::1]:9093", host, port, prefix, error));
    EXPECT_EQ(host + " " + port, "[::1] 9093");
    EXPECT_TRUE(parse_alertmanager_url("HTTPS://u:p@am:8443", host, port, prefix, error));
    EXPECT_EQ(host + " " + port, "am 8443");
    for (const char* bad : {"ftp://x:1", "http://", "http://:9093", "http://x:port", "http://x:0",
                            "http://x:99999", "x:9093", "http://x:1/?q", "http://[::1"}) {
        EXPECT_FALSE(parse_alertmanager_url(bad, host, port, prefix, error)) << bad;
        EXPECT_NE(error.find("expected http[s]://HOST[:PORT][/PREFIX]"), std::string::npos);
    }
    EXPECT_EQ(alertmanager_display_url("https://u:secret@am:8443/x/"), "https://am:8443/x");
    EXPECT_EQ(alertmanager_endpoint("https://u:secret@am:8443/x/"),
              "https://u:secret@am:8443/x/api/v2/alerts");
}

}  // namespace
}  // namespace insert::correlate
