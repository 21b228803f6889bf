#include "dataplane/common/unix_line_sender.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace insert {

namespace {

using namespace std::chrono_literals;

constexpr auto kFirstBackoff = std::chrono::duration_cast<UnixLineSender::Clock::duration>(100ms);
constexpr auto kMaxBackoff = std::chrono::duration_cast<UnixLineSender::Clock::duration>(2s);
constexpr auto kSayEvery = std::chrono::duration_cast<UnixLineSender::Clock::duration>(10s);
// Sent bytes are cut off the front of the queue once this many are there.
constexpr std::size_t kCompactBytes = 1 << 20;

uint64_t count_lines(std::string_view s) {
    return static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
}

double seconds(UnixLineSender::Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

}  // namespace

UnixLineSender::UnixLineSender(std::string path, std::string label, std::size_t buffer_bytes)
    : path_(std::move(path)),
      label_(std::move(label)),
      limit_(std::max<std::size_t>(buffer_bytes, 4096)) {}

UnixLineSender::~UnixLineSender() {
    if (fd_ >= 0) ::close(fd_);
}

bool UnixLineSender::valid_path(const std::string& path, std::string& error) {
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        error = "'" + path + "' cannot name a Unix socket (empty, or longer than " +
                std::to_string(sizeof(addr.sun_path) - 1) + " bytes)";
        return false;
    }
    return true;
}

bool UnixLineSender::connect_now(Clock::time_point) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), std::min(path_.size(), sizeof(addr.sun_path) - 1));
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        away_errno_ = errno;
        return false;
    }
    // A full backlog (EAGAIN) is a collector that is there but behind: tried again later.
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        away_errno_ = errno;
        ::close(fd);
        return false;
    }
    fd_ = fd;
    ++counts_.connects;
    mid_line_ = false;
    return true;
}

bool UnixLineSender::start() {
    const auto now = Clock::now();
    if (connect_now(now)) return true;
    go_away(now);
    std::fprintf(stderr,
                 "%s: %s (the collector is not up yet?); trying again every %.0f s at most, "
                 "keeping up to %zu bytes of records meanwhile\n",
                 label_.c_str(), std::strerror(away_errno_), seconds(kMaxBackoff), limit_);
    last_said_ = now;
    dropped_said_ = counts_.dropped;
    return false;
}

void UnixLineSender::go_away(Clock::time_point now) {
    away_ = true;
    away_since_ = now;
    backoff_ = kFirstBackoff;
    next_attempt_ = now + backoff_;
}

void UnixLineSender::lost(int err, Clock::time_point now) {
    ::close(fd_);
    fd_ = -1;
    dropped_said_ = counts_.dropped;  // what this loss drops is told with the reconnection
    if (mid_line_) {  // the rest of a line cut in two: the next connection starts afresh
        const std::size_t nl = queue_.find('\n', head_);
        head_ = nl == std::string::npos ? queue_.size() : nl + 1;
        ++counts_.dropped;
        mid_line_ = false;
    }
    away_errno_ = err;
    go_away(now);
    std::fprintf(stderr,
                 "%s: connection lost (%s); reconnecting, keeping up to %zu bytes of records "
                 "meanwhile\n",
                 label_.c_str(), std::strerror(err), limit_);
    last_said_ = now;
}

void UnixLineSender::say_away(Clock::time_point now, bool force) {
    if (!force && now - last_said_ < kSayEvery) return;
    std::fprintf(stderr,
                 "%s: still away after %.0f s (%s): %llu lines dropped since the last line, "
                 "%llu in all, %zu bytes waiting\n",
                 label_.c_str(), seconds(now - away_since_), std::strerror(away_errno_),
                 static_cast<unsigned long long>(counts_.dropped - dropped_said_),
                 static_cast<unsigned long long>(counts_.dropped), queue_.size() - head_);
    last_said_ = now;
    dropped_said_ = counts_.dropped;
}

void UnixLineSender::send_queued(Clock::time_point now) {
    while (fd_ >= 0 && head_ < queue_.size()) {
        const ssize_t n =
            ::send(fd_, queue_.data() + head_, queue_.size() - head_, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            head_ += static_cast<std::size_t>(n);
            mid_line_ = queue_[head_ - 1] != '\n';
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        lost(n < 0 ? errno : EPIPE, now);
    }
    if (head_ == queue_.size()) {
        queue_.clear();
        head_ = 0;
    } else if (head_ >= kCompactBytes && head_ >= queue_.size() / 2) {
        queue_.erase(0, head_);
        head_ = 0;
    }
}

void UnixLineSender::pump() {
    const auto now = Clock::now();
    if (fd_ < 0 && now >= next_attempt_) {
        if (connect_now(now)) {
            std::fprintf(stderr,
                         "%s: connected again after %.1f s away (%llu lines dropped meanwhile, "
                         "%llu in all)\n",
                         label_.c_str(), seconds(now - away_since_),
                         static_cast<unsigned long long>(counts_.dropped - dropped_said_),
                         static_cast<unsigned long long>(counts_.dropped));
            away_ = false;
        } else {
            backoff_ = std::min(backoff_ * 2, kMaxBackoff);
            next_attempt_ = now + backoff_;
        }
    }
    if (fd_ < 0 && away_) say_away(now, false);
    send_queued(now);
}

void UnixLineSender::drop_lines(std::string_view lines) {
    counts_.dropped += count_lines(lines);
}

void UnixLineSender::queue_lines(std::string_view lines) {
    if (lines.empty()) return;
    if (head_ > 0 && queue_.size() + lines.size() > limit_) {  // room at the front first
        queue_.erase(0, head_);
        head_ = 0;
    }
    const std::size_t room = limit_ - std::min(limit_, queue_.size() - head_);
    if (lines.size() <= room) {
        queue_.append(lines);
        return;
    }
    // Whole lines while they fit; the rest is dropped.
    std::size_t fits = 0;
    while (fits < lines.size()) {
        const std::size_t nl = lines.find('\n', fits);
        if (nl == std::string_view::npos || nl + 1 > room) break;
        fits = nl + 1;
    }
    queue_.append(lines.substr(0, fits));
    drop_lines(lines.substr(fits));
}

void UnixLineSender::send_lines(std::string_view lines) {
    const auto now = Clock::now();
    send_queued(now);
    if (fd_ >= 0 && head_ == queue_.size()) {  // nothing waits: straight from the caller
        std::size_t sent = 0;
        while (sent < lines.size()) {
            const ssize_t n =
                ::send(fd_, lines.data() + sent, lines.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                sent += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            const int err = n < 0 ? errno : EPIPE;
            mid_line_ = false;
            if (sent > 0 && lines[sent - 1] != '\n') {  // the rest of a line cut: dropped
                sent = lines.find('\n', sent) + 1;
                ++counts_.dropped;
            }
            lost(err, now);
            break;
        }
        if (fd_ >= 0 && sent > 0 && lines[sent - 1] != '\n') {
            // The rest of a line begun on the socket waits whatever the room: it must follow.
            const std::size_t end = lines.find('\n', sent) + 1;
            queue_.append(lines.substr(sent, end - sent));
            mid_line_ = true;
            sent = end;
        }
        lines.remove_prefix(sent);
    }
    queue_lines(lines);
}

void UnixLineSender::write(std::string_view bytes) {
    if (!partial_.empty() || dropping_partial_) {  // the end of a line begun before
        const std::size_t nl = bytes.find('\n');
        if (nl == std::string_view::npos) {
            if (!dropping_partial_) partial_.append(bytes);
            if (partial_.size() > limit_) {
                partial_.clear();
                dropping_partial_ = true;
            }
            return;
        }
        if (dropping_partial_) {
            ++counts_.dropped;
            dropping_partial_ = false;
        } else {
            partial_.append(bytes.substr(0, nl + 1));
            send_lines(partial_);
            partial_.clear();
        }
        bytes.remove_prefix(nl + 1);
    }
    const std::size_t last = bytes.rfind('\n');
    const std::size_t whole = last == std::string_view::npos ? 0 : last + 1;
    send_lines(bytes.substr(0, whole));
    if (whole < bytes.size()) {
        partial_.assign(bytes.substr(whole));
        if (partial_.size() > limit_) {
            partial_.clear();
            dropping_partial_ = true;
        }
    }
    pump();
}

bool UnixLineSender::finish(Clock::duration wait) {
    const auto deadline = Clock::now() + wait;
    if (!partial_.empty() || dropping_partial_) ++counts_.dropped;  // a line never ended
    partial_.clear();
    dropping_partial_ = false;
    while (head_ < queue_.size()) {
        pump();
        if (head_ >= queue_.size()) break;
        const auto now = Clock::now();
        if (now >= deadline || (fd_ < 0 && next_attempt_ >= deadline)) break;
        const auto until = std::min(deadline, fd_ >= 0 ? deadline : next_attempt_);
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
        const int timeout = static_cast<int>(std::clamp<int64_t>(ms.count(), 1, 100));
        if (fd_ >= 0) {
            pollfd p{fd_, POLLOUT, 0};
            ::poll(&p, 1, timeout);
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
        }
    }
    const std::string_view left = std::string_view(queue_).substr(head_);
    const uint64_t undelivered = count_lines(left);
    if (undelivered > 0) {
        counts_.dropped += undelivered;
        std::fprintf(
            stderr, "%s: %llu lines not delivered at the end (%s)\n", label_.c_str(),
            static_cast<unsigned long long>(undelivered),
            fd_ >= 0 ? "the collector did not take them in time" : std::strerror(away_errno_));
    }
    queue_.clear();
    head_ = 0;
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
    return undelivered == 0;
}

}  // namespace insert
