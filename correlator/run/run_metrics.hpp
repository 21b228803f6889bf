// insert-correlate's /metrics (--http; docs/correlation.md 11): what a run has read, joined,
// alerted and written, in the Prometheus text format. Fed on the run's thread - every record
// line the run writes (the sink's observer), the alerts and episodes as they are told, the
// live correlator's counts after each window - and rendered there into text that the HTTP
// thread only copies (run_service.hpp), so that nothing here is read while it changes.
#pragma once

#include <simdjson.h>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/join/clock.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/usecases/security_rules.hpp"
#include "dataplane/common/prometheus_text.hpp"

namespace insert::correlate {

// Applications with a latency histogram of their own (label app="comm[pid]@host"); the
// e2e records of the others go to app="other", and insert_correlate_apps says how many
// there are in all. One whose final record was written (its process exited) keeps its
// series until a new application needs the place; its counts then go to app="other", so
// that the series always add up to every joined message. 32 x 4 parts x 25 series keep a
// scrape near 3,000 lines.
inline constexpr std::size_t kMetricsApps = 32;

// One live input as /metrics shows it: `producer` names it (a --listen connection's
// process as comm[pid], else the input's path), `input` is its number in the run (a
// producer that reconnects is a new input).
struct ProducerState {
    std::string producer;
    uint32_t input = 0;
    IngestCounts counts;
    std::optional<int64_t> newest_ns;  // the newest data time it sent (observer clock)
};

// Inputs open at once beyond this share no series of their own (the totals count them).
inline constexpr std::size_t kMetricsProducers = 256;

// The run's state the records do not carry, as of the last window (or the end).
// A correlator instance on the bus (--nats; docs/scale-out.md): its partitions and messages.
struct BusState {
    uint64_t held = 0;     // partitions owned now
    uint64_t members = 0;  // instances alive at the last look, this one included
    uint64_t taken = 0, lost = 0, given_back = 0;
    uint64_t published = 0, recognised = 0;  // output records
    uint64_t messages = 0, refused = 0, malformed = 0, again = 0;
};

struct RunState {
    IngestCounts inputs;
    JoinCounts join;
    uint64_t late = 0;
    std::optional<int64_t> watermark_ns;  // live: the last window's watermark
    uint64_t held = 0;                    // live: records kept for the windows to come
    uint64_t apps = 0;                    // applications with e2e records held now
    uint64_t windows = 0;
    std::vector<ProducerState> producers;        // live: the inputs open now
    std::optional<DeliveryCounts> alertmanager;  // --alertmanager
    std::optional<BusState> bus;                 // --nats
    bool finished = false;                       // the summary is written: counts are final
};

class RunMetrics {
  public:
    explicit RunMetrics(bool live);

    // One record line the run wrote (without its newline).
    void record(std::string_view line);
    // An alert as soon as it exists (its first offence), an episode once it is one.
    void alert_fired(AlertKind kind) { ++alerts_fired_[static_cast<std::size_t>(kind)]; }
    void episode_fired() { ++episodes_fired_; }
    // The clocks as the last window estimated them (the `clock` records replace them at
    // the end).
    void set_clocks(const std::vector<std::pair<std::string, ClockEstimate>>& clocks);

    // The exposition text of everything so far.
    std::string text(const RunState& state) const;

    uint64_t lines() const { return lines_; }
    uint64_t alerts_written() const;
    uint64_t episodes_written() const { return episodes_written_; }

  private:
    static constexpr std::size_t kParts = 4;  // host, network, completion, total
    struct AppSeries {
        std::array<prometheus::Histogram, kParts> parts;
        bool ended = false;  // its final app record was written (live: its process exited)
        AppSeries();
    };
    struct HostClock {
        double offset_s = 0;
        std::string source;
        bool consistent = true;
    };
    void add_e2e(simdjson::dom::element record);
    void add_alert(simdjson::dom::element record);
    void add_app(simdjson::dom::element record);
    void add_clock(simdjson::dom::element record);

    bool live_;
    simdjson::dom::parser parser_;
    uint64_t lines_ = 0;
    uint64_t e2e_ = 0;
    std::map<std::string, uint64_t> written_;  // records written by type
    std::array<uint64_t, kAlertKinds> alerts_fired_{};
    std::array<uint64_t, kAlertKinds> alerts_written_{};
    uint64_t episodes_fired_ = 0;
    uint64_t episodes_written_ = 0;
    std::map<std::string, AppSeries> apps_;  // by label, at most kMetricsApps
    AppSeries other_;
    std::map<std::string, HostClock> clocks_;
};

}  // namespace insert::correlate
