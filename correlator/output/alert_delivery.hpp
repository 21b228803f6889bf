// Delivery of alerts to a Prometheus Alertmanager (POST /api/v2/alerts) by a thread of its
// own, so that the correlator never waits on the network: a bounded queue (full: the alert
// is dropped and counted), batches of what is queued, retries with exponential backoff and
// jitter on connection errors, timeouts, 5xx and 429, no retry on other 4xx (rejected,
// counted), problems logged once per interval, and alerts kept firing - re-sent every
// resend interval until resolved. HTTP and HTTPS through libcurl (the system's CA bundle,
// or --alertmanager-ca). docs/correlation.md 8 describes what an operator sees.
//
// Why re-send rather than one send with a far endsAt: the Alertmanager resolves an alert
// whose endsAt has passed. Each send of a firing alert carries endsAt = now + 4 resend
// intervals (as Prometheus does), so a firing alert survives three lost re-sends, and when
// the correlator stops or dies its alerts resolve within four intervals instead of
// staying up until a far endsAt - independently of the Alertmanager's resolve_timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "correlator/output/alertmanager.hpp"

namespace insert::correlate {

struct AlertDeliveryOptions {
    std::string url;      // http[s]://[USER:PASSWORD@]HOST[:PORT][/PREFIX]; empty: no delivery
    std::string ca_file;  // https: trust the CAs of this PEM file instead of the system's
    std::size_t queue_limit = 10'000;  // alerts waiting (queued or in a POST); more: dropped
    std::size_t batch = 500;           // alerts per POST (and as many firing ones)
    double resend_s = 60;              // firing alerts are re-sent this often
    double timeout_s = 10;             // one POST, connecting included
    double backoff_min_s = 0.25;       // the first retry's delay; doubling up to...
    double backoff_max_s = 30;         // ... this; each delay drawn from [d/2, d]
    double log_interval_s = 60;        // a repeated problem is logged at most this often
    double wait_s = 5;  // end of a run: how long flush() is given (the run's deadline)
    // One log line (no newline); empty: "insert-correlate: alertmanager: LINE" on stderr.
    std::function<void(const std::string&)> log;
};

// The delivery's counters (summary.alertmanager, docs/correlation.md 8).
struct DeliveryCounts {
    uint64_t sent = 0;          // alerts the Alertmanager accepted (each re-send counts)
    uint64_t rejected = 0;      // alerts of POSTs refused with a 4xx other than 429 (not retried)
    uint64_t dropped = 0;       // alerts not delivered: queue full, or left at a flush deadline
    uint64_t failed_posts = 0;  // POSTs that failed (unreachable, timeout, 5xx, 429, 4xx)
    uint64_t retries = 0;       // POSTs that repeated one that had failed
    uint64_t queued = 0;        // now: alerts waiting (queued or in a POST)
    uint64_t firing = 0;        // now: alerts kept firing (fire() without resolve() yet)
    uint64_t failed() const { return rejected + dropped; }  // alerts not delivered
};

// Whether this build can deliver (it was built with libcurl); when not, --alertmanager is
// refused at option parsing.
bool alert_delivery_available();

class AlertmanagerClient {
  public:
    using Clock = std::chrono::steady_clock;

    // Starts the delivery thread. The URL must have passed parse_alertmanager_url.
    explicit AlertmanagerClient(AlertDeliveryOptions options);
    // Stops at once (a POST under way is aborted); what was not delivered is dropped, and
    // said in one log line. Call flush() first to wait for delivery.
    ~AlertmanagerClient();
    AlertmanagerClient(const AlertmanagerClient&) = delete;
    AlertmanagerClient& operator=(const AlertmanagerClient&) = delete;

    // Sends one alert as it is (its endsAt, or none). Never blocks on the network; false
    // when the queue is full and the alert was dropped (counted).
    bool enqueue(AmAlert alert);
    // Keeps an alert firing, keyed by its label set: sent now, then again every resend
    // interval with endsAt = now + 4 intervals, until resolve() with the same labels. Again
    // with the same labels: replaces it (new annotations, say a count that grew) and sends
    // it now - unless nothing changed. False when it was dropped: a new alert while
    // queue_limit alerts fire.
    bool fire(AmAlert alert);
    // Ends an alert: no longer re-sent, and sent once with its endsAt (0: now) - also one
    // that was never fired (an episode that opened and closed between two calls). False
    // when the queue is full (counted dropped; the Alertmanager then resolves it itself
    // when its last endsAt passes).
    bool resolve(AmAlert alert);
    // Waits until everything queued and every firing alert's latest version has been sent
    // (or rejected), or the deadline; then what is left is counted dropped, logged in one
    // line, and false returned. The client goes on working afterwards.
    bool flush(Clock::time_point deadline);
    DeliveryCounts counts() const;

    struct Result;  // of one POST (alert_delivery.cpp)

  private:
    struct Firing {
        AmAlert alert;
        uint64_t version = 0;       // bumped by each fire()
        uint64_t sent_version = 0;  // the version last sent (or rejected)
        Clock::time_point due;      // when it is (re)sent next
    };

    // A condition logged at most once per interval, with how often it recurred since.
    struct Throttle {
        Clock::time_point last{};
        bool ever = false;
        uint64_t unlogged = 0;
    };

    void run();
    // One POST's outcome into the counters, the firing alerts' schedule and the logs.
    void settle_locked(const Result& r, std::size_t alerts,
                       const std::vector<std::pair<std::string, uint64_t>>& fired);
    bool idle_locked() const;             // nothing queued, in a POST, or fired and not yet sent
    uint64_t undelivered_locked() const;  // alerts queued, in a POST, or fired and not sent
    void drop_all_locked();               // what is undelivered: dropped (flush deadline)
    bool admit_locked();                  // room in the queue; else counted dropped and logged
    Clock::duration backoff_locked(double retry_after_s);
    // `line` when `t` allows one now (with "N more since" when it held some back).
    void throttled_locked(Throttle& t, const std::string& line);
    void log(const std::string& line) const;

    const AlertDeliveryOptions options_;
    const std::string endpoint_;  // URL/api/v2/alerts
    const std::string display_;   // the URL without credentials, for log lines

    mutable std::mutex mutex_;
    std::condition_variable wake_;  // the thread: work, stop, abandon
    std::condition_variable idle_;  // flush(): progress
    std::deque<AmAlert> queue_;
    std::vector<AmAlert> pending_;  // the thread's POST under way or to retry (from queue_)
    std::map<std::string, Firing> firing_;
    DeliveryCounts counts_;
    bool stop_ = false;
    bool abandon_ = false;  // flush() missed its deadline: drop what is left
    std::atomic<bool> abort_post_{false};
    unsigned failures_ = 0;  // consecutive failed POSTs (retryable): the backoff's exponent
    Clock::time_point retry_at_{};
    std::minstd_rand jitter_;
    Throttle unreachable_;         // unreachable, timeouts, 5xx, 429
    Throttle rejected_;            // 4xx
    Throttle full_;                // queue full
    bool trouble_logged_ = false;  // an unreachable line since the last success
    std::string last_error_;
    std::thread thread_;
};

// The end of a run: every security alert as it stands (firing: the Alertmanager resolves
// it resolve_timeout after) and every congestion episode closed (resolved at t_end_ns),
// queued on `client`.
void enqueue_run(AlertmanagerClient& client, const std::vector<Alert>& alerts,
                 const std::vector<CongestionEpisode>& episodes);

}  // namespace insert::correlate
