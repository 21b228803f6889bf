// Where the correlator's records go (batch and live alike): buffered JSON Lines on an
// OutputStream, or nowhere when no --records was given.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "correlator/input/ingest.hpp"
#include "correlator/join/clock.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/views.hpp"
#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

class HostNames;

// A live run's --listen socket (docs/correlation.md 7): connections accepted, and those
// closed at once because the process had no descriptor left for them.
struct ListenCounts {
    bool listening = false;  // no --listen: not in the summary
    uint64_t connections = 0;
    uint64_t refused = 0;
};

// The `summary` record's counts (docs/correlation.md 6).
struct SummaryCounts {
    IngestCounts inputs;
    ListenCounts listen;
    JoinCounts join;
    uint64_t e2e = 0;
    uint64_t resync = 0;
    uint64_t late = 0;
    uint64_t evicted_wrs = 0;
    uint64_t evicted_msgs = 0;
    uint64_t evicted_completions = 0;
    uint64_t hosts = 0;
    uint64_t qps = 0;
    uint64_t apps = 0;
    uint64_t pairs = 0;
    uint64_t trace_drops = 0;
    std::array<uint64_t, static_cast<std::size_t>(AlertKind::count)> alerts{};
    DeliveryCounts alertmanager;  // --alertmanager (docs/correlation.md 8)
    uint64_t congestion = 0;
    double wall_s = 0;
};

class RecordSink {
  public:
    explicit RecordSink(OutputStream* out) : out_(out) {}
    // Sees every record line as it is made (without its newline), whether or not an output
    // is open: the HTML report builds on the same records.
    void set_observer(std::function<void(std::string_view)> observer) {
        observer_ = std::move(observer);
    }

    // Decides, before the observer sees it, whether a record line is written at all (a
    // partition taken over on the bus does not write again what its previous owner wrote).
    void set_filter(std::function<bool(std::string_view)> keep) { filter_ = std::move(keep); }
    // Hands `line` to the observer only (a sink that relays the lines of several others:
    // the bus's partitions, to --html and --http).
    void relay(std::string_view line) {
        if (observer_) observer_(line);
    }
    void e2e(const E2eRow& row, const HostNames& names);
    // Whole record lines formatted elsewhere (each ending in a newline), in order.
    void lines(std::string_view text);
    // Whether records are wanted at all (an output or an observer): formatting can be skipped.
    bool wants_records() const { return active(); }
    // insert-trace's cgroup paths: a `cgroup` record for each (host, id) the first time
    // it is seen (again when a path becomes known), and `cgroup_path` in app records.
    void learn_cgroups(const std::vector<CgroupName>& cgroups, const HostNames& names);
    void app(const AppView& app, bool final);
    void pair(const PairView& pair, const HostNames& names);
    void clock(const std::string& host, const ClockEstimate& clock);
    void alert(const Alert& alert);
    void congestion(const CongestionEpisode& episode);
    void summary(const SummaryCounts& counts);
    // Writes what is buffered; false once the output failed (not when its reader left).
    bool flush();

  private:
    void maybe_flush();
    bool active() const { return out_ || observer_; }
    // Hands the line appended since `from` to the observer.
    void appended(std::size_t from);

    // (host, cgroup id) -> its path (nullopt: announced without one).
    std::map<std::pair<std::string, uint64_t>, std::optional<std::string>> cgroup_paths_;
    OutputStream* out_;
    std::function<void(std::string_view)> observer_;
    std::function<bool(std::string_view)> filter_;
    std::string buffer_;
    bool ok_ = true;
};

}  // namespace insert::correlate
