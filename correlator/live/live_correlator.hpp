// The join on endless input (docs/correlation.md 7): records are kept until the join is
// done with them, and every window re-runs the batch join over what is kept. A matched
// message whose first packet is behind the watermark is emitted once its work request has
// a completion (or --ttl after the watermark passed it, without one), and everything it
// used is forgotten; unmatched items --ttl behind the watermark are decided as unmatched
// and forgotten; QPs, memory regions and processes --ttl after their end. Memory is thus
// bounded by the traffic of --max-delay + --ttl of data time, whatever the run's length.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/join/clock.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/output/views.hpp"
#include "correlator/usecases/alert_tracker.hpp"
#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/origin.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

struct LiveSettings {
    ClockPolicy clock;
    SecurityOptions security;
    CongestionOptions congestion;
    int64_t max_delay_ns = 1'000'000'000;
    int64_t ttl_ns = 30'000'000'000;
    // Told of each alert as soon as it exists (its first offence; a scan at its threshold),
    // and again with its final count when its episode ended (and its record was written).
    std::function<void(const Alert&)> on_alert_opened;
    std::function<void(const Alert&)> on_alert_closed;
    // Told of a congestion episode once it is one, as it stands, and again when it ended.
    std::function<void(const CongestionEpisode&)> on_episode_opened;
    std::function<void(const CongestionEpisode&)> on_episode_closed;
    // A correlator instance over some of the bus's partitions (docs/scale-out.md "The
    // consumers") speaks for its own hosts only: whether records about the host of an
    // address are its to write - e2e, app and alerts by the message's source (requester)
    // address, congestion by its destination, pair and clock by the QP's. Unset: every host.
    std::function<bool(const Ip&)> owns;
};

class LiveCorrelator {
  public:
    LiveCorrelator(HostNames& names, LiveSettings settings, RecordSink& sink);

    // Records of one stream, as decoded from a block of its lines.
    void add(uint32_t stream, Ingested& block);

    // One window. `final`: at the end of input, everything left is decided.
    void window(bool final);
    // Cumulative `app` records (final: false until the end).
    void write_apps(bool final);
    // The end: pairs, final apps and clocks; fills the summary's counts.
    void finish(SummaryCounts& summary);

    const AppAggregator& apps() const { return apps_; }
    // The first alerts and episodes of the run (for the terminal report; the summary counts
    // them all).
    const std::vector<Alert>& alerts() const { return alerts_; }
    const std::vector<CongestionEpisode>& episodes() const { return episodes_; }
    std::vector<std::pair<std::string, ClockEstimate>> clocks() const;
    std::size_t retained() const { return events_.size() + msgs_.size() + qps_.size(); }
    // So far (what finish() puts in the summary): the join's counts (unmatched_wr,
    // wire_only, ...), records that arrived behind the watermark, and the watermark of the
    // last window (INT64_MIN before the first) - read between windows (--http's /metrics).
    const JoinCounts& join_counts() const { return counts_; }
    uint64_t late() const { return late_; }
    // The newest data time (observer clock) input `stream` has sent, if any.
    std::optional<int64_t> newest(uint32_t stream) const {
        if (stream >= streams_.size() || !streams_[stream].seen) return std::nullopt;
        return streams_[stream].newest;
    }
    int64_t last_watermark() const { return last_watermark_; }

  private:
    struct Stream {
        int64_t newest = INT64_MIN;                         // observer time of its newest record
        std::chrono::steady_clock::time_point last_data{};  // when `newest` last moved on
        bool seen = false;
    };
    // One window's steps (live_correlator.cpp), in order.
    struct Window;
    void join_window(Window& win);
    void emit_matched(Window& win);
    void find_behind_emitted(Window& win);
    void decide_unmatched_msgs(Window& win);
    void decide_unmatched_wrs(Window& win);
    void check_security(Window& win);
    void feed_origins(Window& win, std::vector<Offence>& found);
    void add_offences(const std::vector<Offence>& found);
    void feed_congestion_window(Window& win);
    void attribute_qp_records_window(Window& win);
    void retire_exited_apps(Window& win);
    void forget_decided(Window& win);
    void forget_msg(Window& win, std::size_t msg);
    void write_pairs(const Window& win, const std::vector<const WireQp*>& latest_of);
    void close_episode(CongestionEpisode episode);
    // Told episodes that ended before `before_ns` and were not decided episodes after all
    // (their run did not stay one, or it starts elsewhere now) are resolved as told: what
    // was fired at the Alertmanager never stays firing.
    void withdraw_told(int64_t before_ns, const std::vector<CongestionEpisode>& ongoing);
    int64_t host_cutoff(const Window& win, uint32_t host) const;
    bool no_wr_can_match(const Window& win, std::size_t msg) const;
    int64_t clock_uncertainty(uint32_t host) const;
    int64_t watermark(bool final) const;
    int64_t theta(uint32_t host) const;
    bool owns(const Ip& ip) const { return !settings_.owns || settings_.owns(ip); }
    void note(uint32_t stream, int64_t observer_time);

    HostNames& names_;
    LiveSettings settings_;
    RecordSink& sink_;
    std::vector<Stream> streams_;
    HostEvents events_;
    WireMsgs msgs_;
    WireQps qps_;
    JoinHistory history_;                // clock bounds and coverage of every emitted message
    std::set<JoinHistory::Key> paired_;  // QPs whose `pair` record was written (until retired)
    std::vector<ClockEstimate> clocks_;
    std::vector<bool> host_has_qp_;  // a QP of this run's own (LiveSettings::owns): a clock
    AppAggregator apps_;
    // Offences into alerts as their episodes end (docs/correlation.md 8), and the alerts.
    AlertTracker tracker_;
    // evidence.origin: what each address's messages carried, fed in data time order; its
    // tallies are forgotten --ttl after an address's (or QP's) last message.
    OriginFeed origins_;
    std::vector<Alert> alerts_;
    std::array<uint64_t, kAlertKinds> alert_counts_{};
    uint64_t offences_dropped_ = 0;
    CongestionTracker congestion_;
    std::vector<CongestionEpisode> episodes_;
    uint64_t episode_count_ = 0;
    // Episodes told as they stood, by (node, t_start), until decided.
    std::map<std::pair<std::string, int64_t>, CongestionEpisode> episodes_fired_;
    int64_t last_watermark_ = INT64_MIN;
    // Summary counts, cumulative.
    JoinCounts counts_;
    uint64_t e2e_ = 0, resync_ = 0, late_ = 0;
    uint64_t evicted_wrs_ = 0, evicted_msgs_ = 0, evicted_completions_ = 0;
    uint64_t apps_retired_ = 0;  // applications whose final record went out mid-run
    uint64_t qps_retired_ = 0, pairs_ = 0, trace_drops_ = 0, final_qps_ = 0;
};

}  // namespace insert::correlate
