#include "correlator/run/bus_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/terminal_report.hpp"
#include "correlator/report/html_report.hpp"
#include "correlator/run/bus_inputs.hpp"
#include "correlator/run/live_outputs.hpp"
#include "correlator/run/partition_join.hpp"
#include "correlator/run/run_service.hpp"
#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_leases.hpp"
#include "dataplane/common/nats_publisher.hpp"

namespace insert::correlate {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A partition handed over: the longest wait for the bus to acknowledge what its join
// published (what is not acknowledged by then may be published again by the next owner).
constexpr auto kHandOverWait = 5s;

int fail(const std::string& message) {
    std::fprintf(stderr, "insert-correlate: %s\n", message.c_str());
    return 2;
}

Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// INT and TERM stop the run, HUP reopens --records: read from a signalfd with the rest.
class Signals {
  public:
    ~Signals() {
        if (fd_ >= 0) ::close(fd_);
    }
    bool open(std::string& error) {
        sigset_t set;
        sigemptyset(&set);
        for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
        sigprocmask(SIG_BLOCK, &set, nullptr);
        fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd_ < 0) error = std::string("signalfd: ") + std::strerror(errno);
        return fd_ >= 0;
    }
    int fd() const { return fd_; }
    // Reads what came: `stop` on INT/TERM, `hangup` on HUP.
    void read(bool& stop, bool& hangup) {
        signalfd_siginfo info{};
        while (::read(fd_, &info, sizeof(info)) == sizeof(info)) {
            if (info.ssi_signo == SIGHUP)
                hangup = true;
            else
                stop = true;
        }
    }

  private:
    int fd_ = -1;
};

// The instance: its leases, its partitions' joins, its consumer and its output.
class BusInstance {
  public:
    BusInstance(const CorrelateOptions& options, HostNames& names, LiveSettings settings,
                OutputStream& out, std::function<void(std::string_view)> observe)
        : options_(options),
          label_("insert-correlate: --nats " + options.bus.url),
          names_(names),
          settings_(std::move(settings)),
          out_(out),
          observe_(std::move(observe)),
          inputs_(
              options.bus,
              [this](unsigned k) -> LiveCorrelator* {
                  const auto it = joins_.find(k);
                  return it == joins_.end() ? nullptr : &it->second->engine();
              },
              names, counts_) {}

    bool open(const std::string& instance, std::string& error) {
        NatsConfig oc;
        oc.servers = options_.bus.servers;
        oc.prefix = output_stream_name(options_.bus.subject);
        oc.partitions = options_.bus.partitions;
        oc.replicas = options_.bus.replicas;  // 0: as the input stream's
        oc.replicas_of = options_.bus.subject;
        oc.hosts_file = options_.bus.hosts;
        oc.producer = instance;
        oc.label = label_ + " (output stream " + oc.prefix + ")";
        output_ = NatsPublisher::create(oc, error);
        if (!output_) return false;
        NatsLeaseConfig lc;
        lc.servers = options_.bus.servers;
        lc.prefix = options_.bus.subject;
        lc.partitions = options_.bus.partitions;
        lc.candidates = options_.bus.owned;
        lc.instance = instance;
        lc.label = label_;
        lc.ttl = std::chrono::milliseconds(static_cast<int64_t>(options_.bus.lease_ttl_s * 1000));
        lc.interval = std::max(lc.ttl / 5, std::chrono::milliseconds(200));
        leases_ = NatsLeases::create(lc, error);
        if (!leases_) return false;
        if (!inputs_.open(error)) return false;
        output_->start();
        leases_->start();
        return true;
    }

    int inputs_fd() const { return inputs_.fd(); }
    int leases_fd() const { return leases_->fd(); }
    void read_inputs() { inputs_.read(); }

    // The leases' news: partitions taken, lost, to give back.
    void read_leases() {
        std::vector<LeaseEvent> events;
        leases_->take(events);
        for (LeaseEvent& e : events) {
            switch (e.kind) {
                case LeaseEvent::Kind::taken:
                    take(e.partition, e.published);
                    break;
                case LeaseEvent::Kind::lost:
                    drop(e.partition);  // another instance has it: nothing more of ours
                    break;
                case LeaseEvent::Kind::give_back:
                    hand_over(e.partition);
                    leases_->given_back(e.partition);
                    break;
            }
        }
    }

    void window() {
        inputs_.check_gaps();
        for (auto& [k, join] : joins_) {
            join->engine().window(false);
            join->engine().write_apps(false);
            join->sink().flush();
        }
        output_->pump();
    }

    void flush() {
        for (auto& [k, join] : joins_) join->sink().flush();
    }

    std::vector<const LiveCorrelator*> engines() const {
        std::vector<const LiveCorrelator*> out;
        for (const auto& [k, join] : joins_) out.push_back(&join->engine());
        return out;
    }
    std::vector<ProducerState> producers() const {
        std::vector<ProducerState> out;
        inputs_.producers(out, kMetricsProducers);
        return out;
    }
    const IngestCounts& counts() const { return counts_; }
    BusState state() const {
        BusState b;
        inputs_.counts(b);
        const NatsLeases::Counts l = leases_->counts();
        b.held = joins_.size();
        b.members = l.members;
        b.taken = l.taken;
        b.lost = l.lost;
        b.given_back = l.given_back;
        b.published = published_;
        b.recognised = recognised_;
        for (const auto& [k, join] : joins_) {
            b.published += join->counts().published;
            b.recognised += join->counts().recognised;
        }
        return b;
    }

    // The end of the run: handed over while other instances are alive, else decided.
    void finish(SummaryCounts& summary, std::string& report) {
        leases_->hold_still();
        inputs_.finish();
        const bool last = options_.bus.on_stop == "decide" ||
                          (options_.bus.on_stop == "auto" && leases_->others() == 0);
        std::fprintf(stderr, "%s: stopping: %s\n", label_.c_str(),
                     joins_.empty() ? "no partition held"
                     : last         ? "deciding everything held (as at the end of the input)"
                                    : "handing the partitions over to the other instances");
        for (auto& [k, join] : joins_) {
            SummaryCounts one;
            if (last) {
                join->engine().window(true);
                join->engine().finish(one);
                if (!options_.quiet)
                    report += "partition " + std::to_string(k) + ":\n" +
                              terminal_report(one, join->engine().apps(), join->engine().clocks(),
                                              join->engine().alerts(), join->engine().episodes());
            }
            join->sink().flush();
            add_summary(summary, one);
        }
        output_->seal();
        // What was decided is on the bus before the leases go: the next owner reads it back.
        output_->finish(kHandOverWait);
        // Decided: the leases lapse rather than go to another instance, which would rebuild
        // the partitions from their input and decide again what was decided here.
        leases_->stop(!last);
        say_outcome();
        joins_.clear();
    }

  private:
    void take(unsigned k, const std::vector<uint64_t>& published) {
        joins_[k] = std::make_unique<PartitionJoin>(
            k, options_.bus, names_, settings_, &out_, observe_,
            [this](unsigned p, std::string_view line) { output_->write_to(p, line); }, published);
        inputs_.take_partition(k);
    }

    void drop(unsigned k) {
        inputs_.drop_partition(k);
        if (const auto it = joins_.find(k); it != joins_.end()) {
            note(*it->second);
            joins_.erase(it);
        }
    }

    // What the partition's join decided goes out and is acknowledged; the rest is the next
    // owner's to decide.
    void hand_over(unsigned k) {
        inputs_.drop_partition(k);
        const auto it = joins_.find(k);
        if (it == joins_.end()) return;
        it->second->sink().flush();
        output_->seal();
        const auto until = Clock::now() + kHandOverWait;
        while (!output_->settled() && Clock::now() < until) std::this_thread::sleep_for(10ms);
        note(*it->second);
        joins_.erase(it);
    }

    void note(const PartitionJoin& join) {
        const PartitionJoin::Counts c = join.counts();
        published_ += c.published;
        recognised_ += c.recognised;
    }

    void say_outcome() {
        for (const auto& [k, join] : joins_) note(*join);
        const NatsLeases::Counts l = leases_->counts();
        std::fprintf(
            stderr,
            "%s: %llu records published to the output stream, %llu decided again and "
            "recognised as published before; partitions taken %llu times, lost %llu, "
            "given back %llu\n",
            label_.c_str(), static_cast<unsigned long long>(published_),
            static_cast<unsigned long long>(recognised_), static_cast<unsigned long long>(l.taken),
            static_cast<unsigned long long>(l.lost), static_cast<unsigned long long>(l.given_back));
    }

    const CorrelateOptions& options_;
    std::string label_;
    HostNames& names_;
    LiveSettings settings_;
    OutputStream& out_;
    std::function<void(std::string_view)> observe_;
    IngestCounts counts_;
    std::map<unsigned, std::unique_ptr<PartitionJoin>> joins_;
    BusInputs inputs_;
    std::unique_ptr<NatsPublisher> output_;
    std::unique_ptr<NatsLeases> leases_;
    uint64_t published_ = 0, recognised_ = 0;
};

std::string default_instance() {
    std::string id = default_producer_identity("insert-correlate");
    for (char& c : id)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
            c = '_';
    return id;
}

}  // namespace

int run_bus(const CorrelateOptions& options) {
    const auto start = Clock::now();
    HostNames names;
    std::string error;
    OutputStream out;
    RecordSink observers(nullptr);  // --html and --http see every partition's lines
    std::optional<report::HtmlReport> html;
    if (!options.html.empty()) {
        if (!html.emplace().open("--html", options.html, report::run_files({}, options.records), "",
                                 error))
            return fail(error);
        observers.set_observer([&html](std::string_view line) { html->add(line); });
    }
    std::optional<RunService> service;
    if (!options.http.empty()) {
        if (!service.emplace(options, true).start(error)) return fail(error);
        service->observe(observers, html);
    }
    LiveSettings settings;
    settings.clock = options.clock;
    settings.max_delay_ns = static_cast<int64_t>(options.max_delay_s * 1e9);
    settings.ttl_ns = static_cast<int64_t>(options.ttl_s * 1e9);
    settings.security = options.security;
    settings.congestion = options.congestion;
    std::optional<AlertmanagerClient> alertmanager;
    if (!options.alertmanager.url.empty()) alertmanager.emplace(options.alertmanager);
    tell_as_decided(settings, options, alertmanager);
    if (service) service->watch(settings);

    Signals signals;
    if (!signals.open(error)) return fail(error);
    const std::string instance =
        options.bus.instance.empty() ? default_instance() : options.bus.instance;
    BusInstance bus(options, names, settings, out,
                    [&observers](std::string_view line) { observers.relay(line); });
    if (!bus.open(instance, error)) return fail(error);
    if (!options.records.empty() && !out.open(options.records, {}, error)) return fail(error);
    std::fprintf(stderr,
                 "insert-correlate: --nats %s: instance %s, partitions %s of %u owned through "
                 "leases\n",
                 options.bus.url.c_str(), instance.c_str(),
                 nats_client::partition_list(options.bus.owned).c_str(), options.bus.partitions);

    const auto interval = seconds(options.interval_s);
    const auto deadline =
        options.duration_s > 0 ? start + seconds(options.duration_s) : Clock::time_point::max();
    auto next_window = start + interval;
    bool stop = false;
    RecordSink& records = observers;  // SIGHUP reopens the file every join writes to
    while (!stop && Clock::now() < deadline) {
        pollfd fds[3] = {
            {signals.fd(), POLLIN, 0}, {bus.leases_fd(), POLLIN, 0}, {bus.inputs_fd(), POLLIN, 0}};
        const auto until = std::min(next_window, deadline);
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        const int n = ::poll(fds, 3, static_cast<int>(std::max<int64_t>(0, wait.count())));
        if (n > 0) {
            bool hangup = false;
            if (fds[0].revents) signals.read(stop, hangup);
            if (hangup) {
                bus.flush();  // the lines decided so far go to the file open until now
                reopen_records(options, records, out);
            }
            if (fds[1].revents) bus.read_leases();
            if (fds[2].revents) bus.read_inputs();
        }
        if (Clock::now() >= next_window) {
            bus.window();
            if (service) {
                service->bus(bus.state());
                service->window(bus.engines(), bus.counts(), bus.producers(), alertmanager);
            }
            next_window += interval;
        }
    }
    SummaryCounts summary;
    std::string report;
    bus.finish(summary, report);
    if (alertmanager) {
        alertmanager->flush(Clock::now() + seconds(options.alertmanager.wait_s));
        summary.alertmanager = alertmanager->counts();
    }
    summary.inputs = bus.counts();
    summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    RecordSink sink(&out);
    sink.set_observer([&observers](std::string_view line) { observers.relay(line); });
    sink.summary(summary);
    if (service) service->finish(summary);
    if (!sink.flush() || (!out.close() && !out.reader_gone())) return fail(out.error());
    if (html && !html->write("--nats " + options.bus.url, error)) return fail(error);
    if (!options.quiet) std::fputs(report.c_str(), out.to_stdout() ? stderr : stdout);
    return 0;
}

}  // namespace insert::correlate
