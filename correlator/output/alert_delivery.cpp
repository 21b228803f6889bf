#include "correlator/output/alert_delivery.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#if INSERT_HAVE_LIBCURL
#include <curl/curl.h>
#endif

namespace insert::correlate {

// What one POST came to.
struct AlertmanagerClient::Result {
    enum Kind { accepted, retry, rejected, aborted } kind = retry;
    std::string what;          // for log lines: the curl error, or the status and reply
    double retry_after_s = 0;  // 429/503 with Retry-After
};

namespace {

using Clock = AlertmanagerClient::Clock;
using Result = AlertmanagerClient::Result;

int64_t wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The same alert with the same content (the labels are its key).
bool same_content(const AmAlert& a, const AmAlert& b) {
    return a.annotations == b.annotations && a.starts_at_ns == b.starts_at_ns &&
           a.ends_at_ns == b.ends_at_ns && a.generator_url == b.generator_url;
}

#if INSERT_HAVE_LIBCURL

constexpr std::size_t kReplyKept = 4096;  // bytes of a reply kept for the log line
constexpr std::size_t kReplyShown = 200;  // characters of its first line shown

std::string first_line(const std::string& reply) {
    std::string line = reply.substr(0, reply.find_first_of("\r\n"));
    if (line.size() > kReplyShown) line = line.substr(0, kReplyShown) + "...";
    return line;
}

std::once_flag curl_initialised;

// One curl handle, kept across POSTs (connections are reused), owned by the thread.
class Transport {
  public:
    Transport(const AlertDeliveryOptions& options, const std::string& endpoint,
              const std::atomic<bool>& abort)
        : abort_(abort), handle_(curl_easy_init()) {
        if (!handle_) return;
        headers_ = curl_slist_append(nullptr, "Content-Type: application/json");
        // No "Expect: 100-continue" round trip before a large body.
        headers_ = curl_slist_append(headers_, "Expect:");
        const long timeout_ms = std::max(1L, std::lround(options.timeout_s * 1000));
        curl_easy_setopt(handle_, CURLOPT_URL, endpoint.c_str());
        curl_easy_setopt(handle_, CURLOPT_HTTPHEADER, headers_);
        curl_easy_setopt(handle_, CURLOPT_USERAGENT, "insert-correlate");
        curl_easy_setopt(handle_, CURLOPT_NOSIGNAL, 1L);  // a thread: no SIGALRM for DNS
        curl_easy_setopt(handle_, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(handle_, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
        curl_easy_setopt(handle_, CURLOPT_PROTOCOLS_STR, "http,https");
#else
        curl_easy_setopt(handle_, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
        if (!options.ca_file.empty())
            curl_easy_setopt(handle_, CURLOPT_CAINFO, options.ca_file.c_str());
        curl_easy_setopt(handle_, CURLOPT_ERRORBUFFER, error_);
        curl_easy_setopt(handle_, CURLOPT_WRITEFUNCTION, &Transport::on_reply);
        curl_easy_setopt(handle_, CURLOPT_WRITEDATA, this);
        // Called at least once a second while a POST waits: a stop aborts it.
        curl_easy_setopt(handle_, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(handle_, CURLOPT_XFERINFOFUNCTION, &Transport::on_progress);
        curl_easy_setopt(handle_, CURLOPT_XFERINFODATA, this);
    }
    ~Transport() {
        if (handle_) curl_easy_cleanup(handle_);
        curl_slist_free_all(headers_);
    }
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    Result post(const std::string& body) {
        Result r;
        if (!handle_) {
            r.what = "unreachable (curl_easy_init failed)";
            return r;
        }
        reply_.clear();
        error_[0] = '\0';
        curl_easy_setopt(handle_, CURLOPT_POSTFIELDS, body.data());
        curl_easy_setopt(handle_, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(body.size()));
        const CURLcode rc = curl_easy_perform(handle_);
        if (rc == CURLE_ABORTED_BY_CALLBACK && abort_.load()) {
            r.kind = Result::aborted;
            return r;
        }
        if (rc != CURLE_OK) {
            std::string why = error_[0] ? error_ : curl_easy_strerror(rc);
            long os_errno = 0;  // the system's reason, which curl's text may leave out
            curl_easy_getinfo(handle_, CURLINFO_OS_ERRNO, &os_errno);
            const std::string os = os_errno ? std::strerror(static_cast<int>(os_errno)) : "";
            if (!os.empty() && why.find(os) == std::string::npos) why += ": " + os;
            r.what = "unreachable (" + why + ")";
            return r;
        }
        long status = 0;
        curl_easy_getinfo(handle_, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) {
            r.kind = Result::accepted;
            return r;
        }
        const std::string line = first_line(reply_);
        r.what = "HTTP " + std::to_string(status) + (line.empty() ? "" : ": " + line);
        if (status == 429 || status >= 500) {
#if LIBCURL_VERSION_NUM >= 0x074200  // 7.66
            curl_off_t after = 0;
            if (curl_easy_getinfo(handle_, CURLINFO_RETRY_AFTER, &after) == CURLE_OK)
                r.retry_after_s = static_cast<double>(after);
#endif
            return r;  // retry
        }
        r.kind = Result::rejected;
        return r;
    }

  private:
    static size_t on_reply(char* data, size_t size, size_t n, void* self) {
        std::string& reply = static_cast<Transport*>(self)->reply_;
        const size_t bytes = size * n;
        reply.append(data, std::min(bytes, kReplyKept - std::min(kReplyKept, reply.size())));
        return bytes;
    }
    static int on_progress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        return static_cast<Transport*>(self)->abort_.load() ? 1 : 0;
    }

    const std::atomic<bool>& abort_;
    CURL* handle_;
    curl_slist* headers_ = nullptr;
    std::string reply_;
    char error_[CURL_ERROR_SIZE];
};

#else  // built without libcurl: --alertmanager is refused before a client is made

class Transport {
  public:
    Transport(const AlertDeliveryOptions&, const std::string&, const std::atomic<bool>&) {}
    Result post(const std::string&) {
        Result r;
        r.kind = Result::rejected;
        r.what = "this insert-correlate was built without libcurl";
        return r;
    }
};

#endif

}  // namespace

bool alert_delivery_available() {
#if INSERT_HAVE_LIBCURL
    return true;
#else
    return false;
#endif
}

AlertmanagerClient::AlertmanagerClient(AlertDeliveryOptions options)
    : options_(std::move(options)),
      endpoint_(alertmanager_endpoint(options_.url)),
      display_(alertmanager_display_url(options_.url)),
      jitter_(static_cast<std::minstd_rand::result_type>(wall_ns())) {
#if INSERT_HAVE_LIBCURL
    std::call_once(curl_initialised, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
#endif
    // The thread takes no asynchronous signal: SIGINT and SIGTERM stay with the run (a
    // live run reads them from a signalfd), SIGPIPE from a TLS write to a closed
    // connection becomes EPIPE. The mask is inherited, so it is set around the start.
    sigset_t all, before;
    sigfillset(&all);
    for (const int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigdelset(&all, s);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

AlertmanagerClient::~AlertmanagerClient() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
        abort_post_ = true;
    }
    wake_.notify_all();
    idle_.notify_all();
    thread_.join();
    if (const uint64_t left = undelivered_locked())  // the thread is gone: no lock needed
        log(std::to_string(left) + " alert(s) not delivered to " + display_ + " (stopped" +
            (last_error_.empty() ? "" : "; last: " + last_error_) + "), dropped");
}

bool AlertmanagerClient::admit_locked() {
    if (queue_.size() + pending_.size() < options_.queue_limit) return true;
    ++counts_.dropped;
    throttled_locked(full_, "queue full (" + std::to_string(options_.queue_limit) +
                                " alerts waiting for " + display_ + "), dropping alerts");
    return false;
}

bool AlertmanagerClient::enqueue(AmAlert alert) {
    {
        std::lock_guard lock(mutex_);
        if (!admit_locked()) return false;
        queue_.push_back(std::move(alert));
    }
    wake_.notify_one();
    return true;
}

bool AlertmanagerClient::fire(AmAlert alert) {
    std::string key = alert.identity();
    {
        std::lock_guard lock(mutex_);
        auto it = firing_.find(key);
        if (it == firing_.end()) {
            if (firing_.size() >= options_.queue_limit) {
                ++counts_.dropped;
                throttled_locked(full_, std::to_string(options_.queue_limit) +
                                            " alerts already firing, dropping alerts");
                return false;
            }
            it = firing_.emplace(std::move(key), Firing{}).first;
        } else if (same_content(it->second.alert, alert)) {
            return true;  // nothing new: its re-sends go on as planned
        }
        it->second.alert = std::move(alert);
        ++it->second.version;
        it->second.due = Clock::now();
    }
    wake_.notify_one();
    return true;
}

bool AlertmanagerClient::resolve(AmAlert alert) {
    if (alert.ends_at_ns == 0) alert.ends_at_ns = std::max(wall_ns(), alert.starts_at_ns);
    const std::string key = alert.identity();
    {
        std::lock_guard lock(mutex_);
        firing_.erase(key);
        if (!admit_locked()) return false;
        queue_.push_back(std::move(alert));
    }
    wake_.notify_one();
    return true;
}

bool AlertmanagerClient::flush(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (idle_.wait_until(lock, deadline, [this] { return idle_locked() || stop_; })) return true;
    abandon_ = true;
    abort_post_ = true;
    wake_.notify_all();
    idle_.wait(lock, [this] { return !abandon_ || stop_; });
    return false;
}

DeliveryCounts AlertmanagerClient::counts() const {
    std::lock_guard lock(mutex_);
    DeliveryCounts c = counts_;
    c.queued = queue_.size() + pending_.size();
    c.firing = firing_.size();
    return c;
}

bool AlertmanagerClient::idle_locked() const {
    if (!queue_.empty() || !pending_.empty()) return false;
    for (const auto& [key, f] : firing_)
        if (f.sent_version != f.version) return false;
    return true;
}

uint64_t AlertmanagerClient::undelivered_locked() const {
    uint64_t n = queue_.size() + pending_.size();
    for (const auto& [key, f] : firing_) n += f.sent_version != f.version;
    return n;
}

void AlertmanagerClient::drop_all_locked() {
    const uint64_t left = undelivered_locked();
    counts_.dropped += left;
    queue_.clear();
    pending_.clear();
    const Clock::time_point next = Clock::now() + seconds(options_.resend_s);
    for (auto& [key, f] : firing_)
        if (f.sent_version != f.version) f.sent_version = f.version, f.due = next;
    if (left)
        log(std::to_string(left) + " alert(s) not delivered to " + display_ + " in time" +
            (last_error_.empty() ? "" : " (last: " + last_error_ + ")") + ", dropped");
}

Clock::duration AlertmanagerClient::backoff_locked(double retry_after_s) {
    const double exponent = std::min(failures_ - 1u, 30u);
    const double d =
        std::min(options_.backoff_max_s, options_.backoff_min_s * std::pow(2.0, exponent));
    const double drawn = d * std::uniform_real_distribution<double>(0.5, 1.0)(jitter_);
    return seconds(std::max(drawn, std::min(retry_after_s, options_.backoff_max_s)));
}

void AlertmanagerClient::throttled_locked(Throttle& t, const std::string& line) {
    const Clock::time_point now = Clock::now();
    if (t.ever && now - t.last < seconds(options_.log_interval_s)) {
        ++t.unlogged;
        return;
    }
    log(line + (t.unlogged ? " (" + std::to_string(t.unlogged) + " more since the last line)"
                           : std::string()));
    t.last = now;
    t.ever = true;
    t.unlogged = 0;
}

void AlertmanagerClient::log(const std::string& line) const {
    if (options_.log)
        options_.log(line);
    else
        std::fprintf(stderr, "insert-correlate: alertmanager: %s\n", line.c_str());
}

void AlertmanagerClient::settle_locked(const Result& r, std::size_t alerts,
                                       const std::vector<std::pair<std::string, uint64_t>>& fired) {
    const Clock::time_point now = Clock::now();
    // The firing alerts this POST carried are done until their next re-send - unless
    // fire() changed one meanwhile (its new version is still due).
    const auto fired_done = [&] {
        for (const auto& [key, version] : fired)
            if (auto it = firing_.find(key); it != firing_.end() && it->second.version == version)
                it->second.sent_version = version,
                it->second.due = now + seconds(options_.resend_s);
    };
    switch (r.kind) {
        case Result::accepted:
            counts_.sent += alerts;
            pending_.clear();
            fired_done();
            if (trouble_logged_)
                log(display_ + " reachable again (" + std::to_string(failures_) + " failed POSTs)");
            trouble_logged_ = false;
            failures_ = 0;
            retry_at_ = {};
            break;
        case Result::rejected:
            ++counts_.failed_posts;
            counts_.rejected += alerts;
            pending_.clear();
            fired_done();
            failures_ = 0;
            retry_at_ = {};
            last_error_ = r.what;
            throttled_locked(rejected_, display_ + " rejected " + std::to_string(alerts) +
                                            " alert(s): " + r.what + " (not retried)");
            break;
        case Result::retry:
            ++counts_.failed_posts;
            ++failures_;
            retry_at_ = now + backoff_locked(r.retry_after_s);
            last_error_ = r.what;
            if (!unreachable_.ever || now - unreachable_.last >= seconds(options_.log_interval_s))
                trouble_logged_ = true;
            throttled_locked(unreachable_, display_ + " " + r.what + ", retrying (" +
                                               std::to_string(queue_.size() + pending_.size()) +
                                               " alert(s) queued)");
            break;
        case Result::aborted:  // stop or flush deadline: handled where the thread waits
            break;
    }
}

void AlertmanagerClient::run() {
    Transport transport(options_, endpoint_, abort_post_);
    std::unique_lock lock(mutex_);
    for (;;) {
        // Wait for work: queued alerts, or a firing alert due; and for the backoff.
        for (;;) {
            if (stop_) return;
            if (abandon_) {
                drop_all_locked();
                abandon_ = false;
                abort_post_ = false;
                idle_.notify_all();
                continue;
            }
            const Clock::time_point now = Clock::now();
            Clock::time_point ready = Clock::time_point::max();
            if (!queue_.empty() || !pending_.empty()) ready = now;
            for (const auto& [key, f] : firing_) ready = std::min(ready, f.due);
            const Clock::time_point at = std::max(ready, retry_at_);
            if (at <= now) break;
            if (at == Clock::time_point::max())
                wake_.wait(lock);
            else
                wake_.wait_until(lock, at);
        }
        // The POST: what is queued (a failed POST's alerts first, in order), then the
        // firing alerts that are due, with endsAt four re-send intervals ahead.
        while (pending_.size() < options_.batch && !queue_.empty()) {
            pending_.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        std::vector<AmAlert> alerts = pending_;
        std::vector<std::pair<std::string, uint64_t>> fired;
        const Clock::time_point now = Clock::now();
        const int64_t horizon_ns = static_cast<int64_t>(4 * options_.resend_s * 1e9);
        const int64_t wall = wall_ns();
        for (const auto& [key, f] : firing_) {
            if (fired.size() == options_.batch) break;
            if (f.due > now) continue;
            alerts.push_back(f.alert);
            if (f.alert.ends_at_ns == 0)
                alerts.back().ends_at_ns = std::max(wall, f.alert.starts_at_ns) + horizon_ns;
            fired.emplace_back(key, f.version);
        }
        if (failures_ > 0) ++counts_.retries;
        lock.unlock();
        const Result result = transport.post(alertmanager_body(alerts));
        lock.lock();
        settle_locked(result, alerts.size(), fired);
        idle_.notify_all();
    }
}

void enqueue_run(AlertmanagerClient& client, const std::vector<Alert>& alerts,
                 const std::vector<CongestionEpisode>& episodes) {
    for (const Alert& a : alerts) client.enqueue(alertmanager_alert(a));
    for (const CongestionEpisode& e : episodes) client.enqueue(alertmanager_alert(e, true));
}

}  // namespace insert::correlate
