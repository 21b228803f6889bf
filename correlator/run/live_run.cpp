#include "correlator/run/live_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/live/live_correlator.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/output/terminal_report.hpp"
#include "correlator/report/html_report.hpp"
#include "correlator/run/correlate_run.hpp"

namespace insert::correlate {

namespace {

using Clock = std::chrono::steady_clock;

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-correlate: %s\n", message.c_str());
    return 2;
}

// One input stream: its descriptor and the bytes after its last complete line.
struct Source {
    std::string name;
    int fd = -1;
    uint64_t next_line = 1;
    std::unique_ptr<char[]> buffer;
    std::size_t capacity = 0;
    std::size_t size = 0;
};

constexpr std::size_t kReadBytes = 1 << 20;

class LiveInputs {
  public:
    LiveInputs(const CorrelateOptions& options, LiveCorrelator& engine, HostNames& hosts)
        : parser_(hosts), options_(options), engine_(engine) {}
    ~LiveInputs() {
        for (Source& s : sources_)
            if (s.fd > 0) ::close(s.fd);
        if (listener_ >= 0) {
            ::close(listener_);
            ::unlink(options_.listen.c_str());
        }
        if (signal_fd_ >= 0) ::close(signal_fd_);
    }

    bool open(std::string& error) {
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigprocmask(SIG_BLOCK, &stop, nullptr);
        signal_fd_ = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
        if (signal_fd_ < 0) {
            error = std::string("signalfd: ") + std::strerror(errno);
            return false;
        }
        for (const std::string& in : options_.inputs) {
            const int fd = in == "-" ? 0 : ::open(in.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0) {
                error = in + ": " + std::strerror(errno);
                return false;
            }
            if (fd == 0) ::fcntl(0, F_SETFL, ::fcntl(0, F_GETFL) | O_NONBLOCK);
            add_source(in, fd);
        }
        if (!options_.listen.empty() && !listen(error)) return false;
        return true;
    }

    // Reads what is there until the next window is due; false when the run is over.
    bool pump(Clock::time_point until, bool& stop) {
        std::vector<pollfd> fds;
        fds.push_back({signal_fd_, POLLIN, 0});
        if (listener_ >= 0) fds.push_back({listener_, POLLIN, 0});
        const std::size_t first_source = fds.size();
        std::vector<std::size_t> index;
        for (std::size_t i = 0; i < sources_.size(); ++i)
            if (sources_[i].fd >= 0) {
                fds.push_back({sources_[i].fd, POLLIN, 0});
                index.push_back(i);
            }
        if (listener_ < 0 && index.empty()) return false;  // every input ended
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        const int n =
            ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count())));
        if (n < 0 && errno != EINTR) return false;
        if (n <= 0) return true;
        if (fds[0].revents) {
            stop = true;
            return false;
        }
        if (listener_ >= 0 && fds[1].revents & POLLIN) accept_one();
        for (std::size_t k = 0; k < index.size(); ++k)
            if (fds[first_source + k].revents) read_source(index[k]);
        return true;
    }

  private:
    bool listen(std::string& error) {
        const std::string& path = options_.listen;
        sockaddr_un addr{};
        if (path.size() >= sizeof(addr.sun_path)) {
            error = "--listen " + path + ": path too long for a Unix socket";
            return false;
        }
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                error =
                    "--listen " + path + ": exists and is not a socket (refusing to replace it)";
                return false;
            }
            ::unlink(path.c_str());  // a stale socket of an earlier run
        }
        listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.c_str(), path.size());
        if (listener_ < 0 ||
            ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
            ::listen(listener_, 64) != 0) {
            error = "--listen " + path + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }

    void accept_one() {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) add_source(options_.listen + "#" + std::to_string(++connections_), fd);
    }

    void add_source(const std::string& name, int fd) {
        Source s;
        s.name = name;
        s.fd = fd;
        s.capacity = kReadBytes;
        s.buffer.reset(new char[s.capacity + simdjson::SIMDJSON_PADDING]);
        sources_.push_back(std::move(s));
        names_.push_back(name);
    }

    void read_source(std::size_t i) {
        Source& s = sources_[i];
        bool eof = false;
        while (true) {
            if (s.size == s.capacity) {  // a line longer than the buffer: grow it
                auto bigger = std::make_unique<char[]>(s.capacity * 2 + simdjson::SIMDJSON_PADDING);
                std::memcpy(bigger.get(), s.buffer.get(), s.size);
                s.buffer = std::move(bigger);
                s.capacity *= 2;
            }
            const ssize_t n = ::read(s.fd, s.buffer.get() + s.size, s.capacity - s.size);
            if (n > 0) {
                s.size += static_cast<std::size_t>(n);
                if (s.size < s.capacity) break;  // drained for now
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            eof = true;  // 0, or an error: the stream is over
            break;
        }
        const char* last = static_cast<const char*>(memrchr(s.buffer.get(), '\n', s.size));
        std::size_t whole = last ? static_cast<std::size_t>(last - s.buffer.get()) + 1 : 0;
        if (eof) whole = s.size;
        if (whole > 0) deliver(i, whole, eof && s.buffer[whole - 1] != '\n');
        std::memmove(s.buffer.get(), s.buffer.get() + whole, s.size - whole);
        s.size -= whole;
        if (eof) {
            if (s.fd > 0) ::close(s.fd);
            s.fd = -1;
        }
    }

    // Decodes the whole lines at the start of the buffer. What follows them (the start of
    // the next line) and the buffer's padding are what the parser may read past a line.
    void deliver(std::size_t i, std::size_t bytes, bool unterminated) {
        Source& s = sources_[i];
        Ingested block;
        s.next_line += parse_block(parser_, s.buffer.get(), bytes, static_cast<uint32_t>(i),
                                   s.next_line, unterminated, block, block.counts, block.first_bad);
        counts_.add(block.counts);
        for (const BadLine& b : block.first_bad)
            if (reported_++ < kMaxReported)
                std::fprintf(stderr, "insert-correlate: %s:%llu: %s\n", names_[b.input].c_str(),
                             static_cast<unsigned long long>(b.line), b.reason.c_str());
        engine_.add(static_cast<uint32_t>(i), block);
    }

  public:
    IngestCounts counts_;

  private:
    LineParser parser_;
    const CorrelateOptions& options_;
    LiveCorrelator& engine_;
    std::vector<Source> sources_;
    std::vector<std::string> names_;
    int listener_ = -1;
    int signal_fd_ = -1;
    unsigned connections_ = 0;
    std::size_t reported_ = 0;
};

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

}  // namespace

int run_live(const CorrelateOptions& options) {
    const auto start = Clock::now();
    HostNames names;
    std::string error;
    OutputStream out;
    RecordSink sink(&out);
    std::optional<report::HtmlReport> html;  // --html: fed every record line
    if (!options.html.empty()) {
        if (!html.emplace().open("--html", options.html,
                                 report::run_files(options.inputs, options.records), "", error))
            return fail(error);
        sink.set_observer([&html](std::string_view line) { html->add(line); });
    }
    LiveSettings settings;
    settings.clock = options.clock;
    settings.max_delay_ns = static_cast<int64_t>(options.max_delay_s * 1e9);
    settings.ttl_ns = static_cast<int64_t>(options.ttl_s * 1e9);
    settings.security = options.security;
    settings.congestion = options.congestion;
    // --alertmanager: its own thread, so that delivery never holds up a window.
    std::optional<AlertmanagerClient> alertmanager;
    if (!options.alertmanager.url.empty()) alertmanager.emplace(options.alertmanager);
    tell_as_decided(settings, options, alertmanager);
    LiveCorrelator engine(names, settings, sink);
    LiveInputs inputs(options, engine, names);
    if (!inputs.open(error)) return fail(error);
    // Outputs only once the inputs are there: a failed start leaves an existing file alone.
    if (!options.records.empty() && !out.open(options.records, options.inputs, error))
        return fail(error);

    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options.interval_s));
    const auto deadline = options.duration_s > 0
                              ? start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(options.duration_s))
                              : Clock::time_point::max();
    auto next_window = start + interval;
    bool stop = false;
    while (!stop && Clock::now() < deadline) {
        const bool more = inputs.pump(std::min(next_window, deadline), stop);
        if (Clock::now() >= next_window) {
            engine.window(false);
            engine.write_apps(false);
            next_window += interval;
        }
        if (!more) break;
    }
    engine.window(true);
    SummaryCounts summary;
    engine.finish(summary);
    if (alertmanager) {  // everything was told as it was decided: what is queued goes out
        alertmanager->flush(Clock::now() +
                            std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(options.alertmanager.wait_s)));
        summary.alertmanager = alertmanager->counts();
    }
    summary.inputs = inputs.counts_;
    summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    sink.summary(summary);
    if (!sink.flush() || (!out.close() && !out.reader_gone())) return fail(out.error());
    if (html && !html->write(report::run_source(options.inputs, options.listen), error))
        return fail(error);
    if (!options.quiet) {
        const std::string text = terminal_report(summary, engine.apps(), engine.clocks(),
                                                 engine.alerts(), engine.episodes());
        std::fputs(text.c_str(), out.to_stdout() ? stderr : stdout);
    }
    return 0;
}

}  // namespace insert::correlate
