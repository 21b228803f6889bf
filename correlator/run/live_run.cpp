#include "correlator/run/live_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/live/live_correlator.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/output/terminal_report.hpp"
#include "correlator/report/html_report.hpp"
#include "correlator/run/correlate_run.hpp"
#include "correlator/run/listen_socket.hpp"
#include "correlator/run/live_outputs.hpp"
#include "correlator/run/run_service.hpp"
#include "correlator/run/stream_source.hpp"

namespace insert::correlate {

namespace {

using Clock = std::chrono::steady_clock;

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-correlate: %s\n", message.c_str());
    return 2;
}

// The live inputs: the streams given, the --listen socket and the connections it accepts,
// or the bus's partitions (--nats), and the signals (INT and TERM stop the run, HUP asks for
// the outputs to be reopened), polled together.
class LiveInputs {
  public:
    LiveInputs(const CorrelateOptions& options, LiveCorrelator& engine, HostNames& hosts)
        : parser_(hosts), options_(options), engine_(engine) {}
    ~LiveInputs() {
        for (StreamSource& s : sources_) s.close();
        if (signal_fd_ >= 0) ::close(signal_fd_);
    }

    bool open(std::string& error) {
        sigset_t signals;
        sigemptyset(&signals);
        sigaddset(&signals, SIGINT);
        sigaddset(&signals, SIGTERM);
        sigaddset(&signals, SIGHUP);
        sigprocmask(SIG_BLOCK, &signals, nullptr);
        signal_fd_ = signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
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
            add_source(in, fd, 0);
        }
        if (!options_.listen.empty() &&
            !listener_.open(options_.listen, options_.listen_gid, options_.listen_group, error))
            return false;
        return true;
    }

    // Reads what is there until the next window is due; false when the run is over.
    bool pump(Clock::time_point until, bool& stop) {
        const auto now = Clock::now();
        std::vector<pollfd> fds;
        fds.push_back({signal_fd_, POLLIN, 0});
        const bool listening = listener_.fd() >= 0;
        const bool accepting = listening && now >= listener_.resume_at();
        if (accepting) fds.push_back({listener_.fd(), POLLIN, 0});
        if (listening && !accepting) until = std::min(until, listener_.resume_at());
        const std::size_t first_source = fds.size();
        const std::vector<std::size_t> index = open_;  // read_source() may close some
        for (const std::size_t i : index) fds.push_back({sources_[i].fd(), POLLIN, 0});
        if (!listening && index.empty()) return false;  // every input ended
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
        const int n =
            ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count())));
        if (n < 0) {
            // Only ENOMEM is possible here (the descriptors are this process's, fewer than
            // its limit): said, and tried again after a rest.
            if (errno != EINTR) poll_failed(errno);
            return true;
        }
        if (n == 0) return true;
        if (fds[0].revents && take_signal(stop)) return false;
        if (accepting && fds[1].revents & POLLIN) accept_one();
        for (std::size_t k = 0; k < index.size(); ++k)
            if (fds[first_source + k].revents) read_source(index[k]);
        std::erase_if(open_, [this](std::size_t i) { return sources_[i].fd() < 0; });
        return true;
    }

    // The open inputs as /metrics shows them (at most kMetricsProducers).
    std::vector<ProducerState> producers() const {
        std::vector<ProducerState> out;
        for (const std::size_t i : open_) {
            if (out.size() == kMetricsProducers) break;
            const StreamSource& s = sources_[i];
            const auto input = static_cast<uint32_t>(i);
            out.push_back({s.producer, input, s.counts, engine_.newest(input)});
        }
        return out;
    }

    // A SIGHUP arrived since the last call.
    bool take_hangup() { return std::exchange(hangup_, false); }
    ListenCounts listen_counts() const {
        ListenCounts c;
        c.listening = listener_.fd() >= 0;
        c.connections = listener_.connections();
        c.refused = listener_.refused();
        return c;
    }

  private:
    // INT/TERM: true (the run stops). HUP: noted for the run, which reopens its outputs.
    bool take_signal(bool& stop) {
        signalfd_siginfo info{};
        while (::read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
            if (info.ssi_signo == SIGHUP)
                hangup_ = true;
            else
                stop = true;
        }
        return stop;
    }

    void poll_failed(int err) {
        const auto now = Clock::now();
        if (now - last_poll_error_ >= std::chrono::seconds(10)) {
            std::fprintf(stderr, "insert-correlate: poll: %s (trying again)\n", std::strerror(err));
            last_poll_error_ = now;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }

    void accept_one() {
        pid_t peer = 0;
        const int fd = listener_.accept(Clock::now(), open_.size(), peer);
        if (fd >= 0)
            add_source(options_.listen + "#" + std::to_string(listener_.connections()), fd, peer);
    }

    void add_source(const std::string& name, int fd, pid_t peer) {
        sources_.emplace_back(name, fd, options_.max_line, peer);
        sources_.back().producer = peer > 0 ? process_label(peer) : name;
        open_.push_back(sources_.size() - 1);
    }

    void read_source(std::size_t i) {
        StreamSource& s = sources_[i];
        const StreamSource::Read r =
            s.read([this, i](const char* data, std::size_t bytes, bool unterminated) {
                deliver(i, data, bytes, unterminated);
            });
        if (r != StreamSource::Read::too_long) return;
        ++counts_.too_long;
        const bool connection = i >= options_.inputs.size();
        const std::string what = !connection    ? "input"
                                 : s.peer() > 0 ? "connection of " + describe_process(s.peer())
                                                : "connection";
        std::fprintf(stderr,
                     "insert-correlate: %s:%llu: line longer than --max-line %llu bytes: %s "
                     "closed\n",
                     s.name().c_str(), static_cast<unsigned long long>(s.next_line()),
                     static_cast<unsigned long long>(options_.max_line), what.c_str());
    }

    // Decodes the whole lines at the start of the buffer. What follows them (the start of
    // the next line) and the buffer's padding are what the parser may read past a line.
    void deliver(std::size_t i, const char* data, std::size_t bytes, bool unterminated) {
        StreamSource& s = sources_[i];
        Ingested block;
        s.advance(parse_block(parser_, data, bytes, static_cast<uint32_t>(i), s.next_line(),
                              unterminated, block, block.counts, block.first_bad));
        counts_.add(block.counts);
        s.counts.add(block.counts);
        for (const BadLine& b : block.first_bad)
            if (reported_++ < kMaxReported)
                std::fprintf(stderr, "insert-correlate: %s:%llu: %s\n",
                             sources_[b.input].name().c_str(),
                             static_cast<unsigned long long>(b.line), b.reason.c_str());
        engine_.add(static_cast<uint32_t>(i), block);
    }

  public:
    IngestCounts counts_;

  private:
    LineParser parser_;
    const CorrelateOptions& options_;
    LiveCorrelator& engine_;
    // Every stream the run has had (its index is the engine's input), and those still open:
    // a run with producers coming and going polls only the ones connected.
    std::deque<StreamSource> sources_;
    std::vector<std::size_t> open_;
    ListenSocket listener_;
    int signal_fd_ = -1;
    bool hangup_ = false;
    Clock::time_point last_poll_error_{};
    std::size_t reported_ = 0;
};

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
    std::optional<RunService> service;  // --http: /metrics and the live page (run_service.hpp)
    if (!options.http.empty()) {
        if (!service.emplace(options, true).start(error)) return fail(error);
        service->observe(sink, html);
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
    if (service) service->watch(settings);
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
        if (inputs.take_hangup()) reopen_records(options, sink, out);
        if (Clock::now() >= next_window) {
            engine.window(false);
            engine.write_apps(false);
            if (service)
                service->window({&engine}, inputs.counts_, inputs.producers(), alertmanager);
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
    summary.listen = inputs.listen_counts();
    summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    sink.summary(summary);
    if (service) service->finish(summary);
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
