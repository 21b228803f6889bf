#include "correlator/run/run_metrics.hpp"

#include <algorithm>
#include <chrono>

#include "correlator/report/json_fields.hpp"
#include "dataplane/common/version.hpp"

namespace insert::correlate {

namespace {

using prometheus::Label;
using prometheus::MetricType;
using prometheus::TextWriter;
using report::int_field;
using report::text_field;
using report::uint_field;

constexpr MetricType kCounter = MetricType::counter;
constexpr MetricType kGauge = MetricType::gauge;
constexpr const char* kPartNames[] = {"host", "network", "completion", "total"};
constexpr const char* kPartFields[] = {"host_ns", "net_ns", "completion_ns", "total_ns"};

// The record's type from the start of a line the run wrote ({"type":"e2e",...), without
// parsing it: only some types are parsed.
std::string_view line_type(std::string_view line) {
    constexpr std::string_view kStart = "{\"type\":\"";
    if (line.substr(0, kStart.size()) != kStart) return {};
    const std::string_view rest = line.substr(kStart.size());
    return rest.substr(0, rest.find('"'));
}

// comm[pid]@host: an application as the report's charts name it, in a label.
std::string app_label(simdjson::dom::element r) {
    return std::string(text_field(r, "comm").value_or("?")) + "[" +
           std::to_string(int_field(r, "pid").value_or(0)) + "]@" +
           std::string(text_field(r, "host").value_or("?"));
}

}  // namespace

RunMetrics::AppSeries::AppSeries()
    : parts{prometheus::Histogram(prometheus::latency_buckets_seconds()),
            prometheus::Histogram(prometheus::latency_buckets_seconds()),
            prometheus::Histogram(prometheus::latency_buckets_seconds()),
            prometheus::Histogram(prometheus::latency_buckets_seconds())} {}

RunMetrics::RunMetrics(bool live) : live_(live) {}

uint64_t RunMetrics::alerts_written() const {
    uint64_t n = 0;
    for (const uint64_t a : alerts_written_) n += a;
    return n;
}

void RunMetrics::record(std::string_view line) {
    ++lines_;
    const std::string_view type = line_type(line);
    if (type.empty()) return;
    ++written_[std::string(type)];
    if (type == "congestion") {
        ++episodes_written_;
        return;
    }
    const bool app = type == "app";
    if (type != "e2e" && type != "alert" && type != "clock" && !app) return;
    // Only an application's final record matters here: its series is then forgotten.
    if (app && line.find("\"final\":true") == std::string_view::npos) return;
    simdjson::dom::element record;
    if (parser_.parse(line.data(), line.size(), true).get(record) != simdjson::SUCCESS ||
        !record.is_object())
        return;
    if (type == "e2e")
        add_e2e(record);
    else if (type == "alert")
        add_alert(record);
    else if (type == "clock")
        add_clock(record);
    else
        add_app(record);
}

void RunMetrics::add_e2e(simdjson::dom::element r) {
    ++e2e_;
    std::string label = app_label(r);
    auto it = apps_.find(label);
    if (it == apps_.end() && apps_.size() >= kMetricsApps) {
        // Full: an application that has ended gives its place, its counts going to "other"
        // (counters never go down: the sum over the series stays every joined message).
        const auto ended =
            std::find_if(apps_.begin(), apps_.end(), [](const auto& a) { return a.second.ended; });
        if (ended != apps_.end()) {
            for (std::size_t p = 0; p < kParts; ++p) other_.parts[p].merge(ended->second.parts[p]);
            apps_.erase(ended);
        }
    }
    if (it == apps_.end() && apps_.size() < kMetricsApps)
        it = apps_.emplace(std::move(label), AppSeries{}).first;
    if (it != apps_.end()) it->second.ended = false;
    AppSeries& series = it == apps_.end() ? other_ : it->second;
    // ns / 1e9 (not * 1e-9): a part of exactly 5000 ns is then the bucket bound 5e-06.
    for (std::size_t p = 0; p < kParts; ++p)
        if (const auto ns = int_field(r, kPartFields[p]))
            series.parts[p].observe(static_cast<double>(*ns) / 1e9);
}

void RunMetrics::add_alert(simdjson::dom::element r) {
    const std::string_view kind = text_field(r, "kind").value_or("");
    for (std::size_t k = 0; k < kAlertKinds; ++k)
        if (alert_kind_name(static_cast<AlertKind>(k)) == kind) {
            ++alerts_written_[k];
            if (!live_) ++alerts_fired_[k];  // a batch run tells them when it writes them
        }
}

// A live run's application whose process exited --ttl ago: its series stay until a new
// application needs the place (add_e2e).
void RunMetrics::add_app(simdjson::dom::element r) {
    if (!live_) return;
    const auto it = apps_.find(app_label(r));
    if (it != apps_.end()) it->second.ended = true;
}

void RunMetrics::add_clock(simdjson::dom::element r) {
    const auto host = text_field(r, "host");
    if (!host) return;
    HostClock& c = clocks_[std::string(*host)];
    c.offset_s = static_cast<double>(int_field(r, "offset_ns").value_or(0)) / 1e9;
    c.source = std::string(text_field(r, "source").value_or("none"));
    bool consistent = true;
    if (r["consistent"].get(consistent) != simdjson::SUCCESS) consistent = true;
    c.consistent = consistent;
}

void RunMetrics::set_clocks(const std::vector<std::pair<std::string, ClockEstimate>>& clocks) {
    for (const auto& [host, estimate] : clocks) {
        HostClock& c = clocks_[host];
        c.offset_s = static_cast<double>(estimate.offset) / 1e9;
        c.source = std::string(clock_source_name(estimate.source));
        c.consistent = estimate.consistent;
    }
}

std::string RunMetrics::text(const RunState& s) const {
    std::string out;
    TextWriter w(out);
    w.family("insert_correlate_info", kGauge, "1: the program's version and the kind of run.")
        .sample({{"version", kVersion}, {"mode", live_ ? "live" : "batch"}}, 1.0);
    w.family("insert_correlate_finished", kGauge,
             "1 once the run has written its summary: the counts are final (a batch run serves "
             "until it ends).")
        .sample({}, s.finished ? 1.0 : 0.0);

    w.family("insert_correlate_lines_in_total", kCounter,
             "Input lines read. Flat while producers should be sending: nothing arrives.")
        .sample({}, s.inputs.lines);
    w.family("insert_correlate_records_in_total", kCounter,
             "Records read, by type: msg and qp from insert-dp, host from insert-trace, ignored "
             "for records of other types. Zero for msg or host: that producer is not "
             "connected, and nothing can be joined.")
        .sample({{"type", "msg"}}, s.inputs.msg)
        .sample({{"type", "qp"}}, s.inputs.qp)
        .sample({{"type", "host"}}, s.inputs.host)
        .sample({{"type", "ignored"}}, s.inputs.ignored);
    w.family("insert_correlate_bad_lines_total", kCounter,
             "Input lines skipped, by reason (not_json, truncated, bad_field, unknown_type). "
             "Non-zero: a producer writes what the correlator cannot read (stderr names the "
             "first lines).")
        .sample({{"reason", "not_json"}}, s.inputs.not_json)
        .sample({{"reason", "truncated"}}, s.inputs.truncated)
        .sample({{"reason", "bad_field"}}, s.inputs.bad_field)
        .sample({{"reason", "unknown_type"}}, s.inputs.unknown_type);

    w.family("insert_correlate_e2e_total", kCounter,
             "Messages joined with the work request that posted them (e2e records written). "
             "Non-zero: host and wire records meet.")
        .sample({}, e2e_);
    w.family("insert_correlate_unmatched_work_requests_total", kCounter,
             "Traced work requests no wire message matched. Non-zero: the observer missed "
             "their packets (not on its path, dropped, or --ttl too short).")
        .sample({}, s.join.unmatched_wr);
    w.family("insert_correlate_wire_only_messages_total", kCounter,
             "Messages of traced QPs no work request matched. Non-zero: trace losses, or "
             "messages no application posted (see the injected_message alerts).")
        .sample({}, s.join.wire_only);
    w.family("insert_correlate_untraced_messages_total", kCounter,
             "Messages whose source is not traced: qp (a traced host, no QP of its trace "
             "sends them) or host (no trace mentions the source address). Non-zero: a host "
             "without insert-trace, or traffic from outside.")
        .sample({{"source", "qp"}}, s.join.src_untraced)
        .sample({{"source", "host"}}, s.join.src_host_untraced);
    w.family("insert_correlate_duplicate_messages_total", kCounter,
             "msg records received twice (the same message from two observers). Non-zero: "
             "overlapping observation points; each is joined once.")
        .sample({}, s.join.duplicate_msgs);
    w.family("insert_correlate_late_records_total", kCounter,
             "Live: records that arrived behind the watermark. Non-zero: a producer is more "
             "than --max-delay behind the others; its records may stay unmatched.")
        .sample({}, s.late);
    w.family("insert_correlate_records_written_total", kCounter,
             "Records written, by type (e2e, app, pair, clock, alert, congestion, summary).");
    for (const auto& [type, n] : written_) w.sample({{"type", type}}, n);

    w.family("insert_correlate_alerts_fired_total", kCounter,
             "Security alerts raised, by kind (live: at their first offence; a scan when it "
             "reached its threshold). Non-zero: an attack or a misbehaving application "
             "(docs/correlation.md 8).");
    for (std::size_t k = 0; k < kAlertKinds; ++k)
        w.sample({{"kind", alert_kind_name(static_cast<AlertKind>(k))}}, alerts_fired_[k]);
    w.family("insert_correlate_alerts_total", kCounter,
             "Security alerts ended and written as alert records, by kind. Non-zero: see "
             "insert_correlate_alerts_fired_total; the difference is still going on.");
    for (std::size_t k = 0; k < kAlertKinds; ++k)
        w.sample({{"kind", alert_kind_name(static_cast<AlertKind>(k))}}, alerts_written_[k]);
    w.family("insert_correlate_alerts_firing", kGauge,
             "Security alerts going on now, by kind. Non-zero: an attack in progress.");
    for (std::size_t k = 0; k < kAlertKinds; ++k)
        w.sample({{"kind", alert_kind_name(static_cast<AlertKind>(k))}},
                 alerts_fired_[k] - std::min(alerts_fired_[k], alerts_written_[k]));
    w.family("insert_correlate_congestion_episodes_fired_total", kCounter,
             "Congestion episodes told while still going on (live; a batch run, or an episode "
             "decided at once, only counts in insert_correlate_congestion_episodes_total). "
             "Non-zero: applications slow each other down in the network (docs/correlation.md "
             "9).")
        .sample({}, episodes_fired_);
    w.family("insert_correlate_congestion_episodes_total", kCounter,
             "Congestion episodes decided and written as congestion records. Non-zero: "
             "applications slowed each other down in the network.")
        .sample({}, episodes_written_);

    w.family("insert_correlate_latency_seconds", MetricType::histogram,
             "Latency of joined messages per application (app=comm[pid]@host of the requester; "
             "at most 32 at once, an ended one giving its place to a new one; app=other: the "
             "rest, and the ended ones that gave their place) and part: host (post to the "
             "first packet), network (first packet to acknowledgement), completion "
             "(acknowledgement to poll), total (post to poll). Negative parts (inconsistent "
             "clock bounds) count in the lowest bucket.");
    for (const auto& [label, series] : apps_)
        for (std::size_t p = 0; p < kParts; ++p)
            w.histogram({{"app", label}, {"part", kPartNames[p]}}, series.parts[p]);
    if (std::any_of(other_.parts.begin(), other_.parts.end(),
                    [](const prometheus::Histogram& h) { return h.count() > 0; }))
        for (std::size_t p = 0; p < kParts; ++p)
            w.histogram({{"app", "other"}, {"part", kPartNames[p]}}, other_.parts[p]);
    w.family("insert_correlate_apps", kGauge,
             "Applications with joined messages held now (live: until their process exited "
             "--ttl ago). Above insert_correlate_latency_apps: the rest are in app=\"other\".")
        .sample({}, s.apps);
    w.family("insert_correlate_latency_apps", kGauge,
             "Applications with latency series of their own (at most 32).")
        .sample({}, static_cast<uint64_t>(apps_.size()));

    w.family("insert_correlate_clock_offset_seconds", kGauge,
             "Each host's clock minus the observer's, as the join uses it, with its source "
             "(midpoint, lower, upper, option, same_clock, none). Large, or changing: the host's "
             "clock is not synchronised; host and completion latencies move with it.");
    for (const auto& [host, c] : clocks_)
        w.sample({{"host", host}, {"source", c.source}}, c.offset_s);
    w.family("insert_correlate_clock_inconsistent", kGauge,
             "1 for a host whose clock bounds contradict each other (lower above upper). "
             "Non-zero: the host's clock stepped, or the records are wrong.");
    for (const auto& [host, c] : clocks_) w.sample({{"host", host}}, c.consistent ? 0.0 : 1.0);

    if (live_) {
        double lag = 0;
        if (s.watermark_ns) {
            const auto now = std::chrono::system_clock::now().time_since_epoch();
            lag = static_cast<double>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() -
                      *s.watermark_ns) *
                  1e-9;
        }
        w.family("insert_correlate_watermark_lag_seconds", kGauge,
                 "Live: wall clock minus the data time the last window reached (0 before the "
                 "first). Growing: a producer holds the watermark back, or the records come "
                 "from the past (a replay).")
            .sample({}, lag);
        w.family("insert_correlate_producer_records_in_total", kCounter,
                 "Live: records read from each open input, by type (msg, qp, host, ignored, "
                 "bad). Zero for one while the others grow: that producer sends nothing.");
        for (const ProducerState& p : s.producers) {
            const std::string input = std::to_string(p.input);
            const auto sample = [&](const char* type, uint64_t v) {
                w.sample({{"producer", p.producer}, {"input", input}, {"type", type}}, v);
            };
            sample("msg", p.counts.msg);
            sample("qp", p.counts.qp);
            sample("host", p.counts.host);
            sample("ignored", p.counts.ignored);
            sample("bad", p.counts.bad());
        }
        w.family("insert_correlate_producer_data_time_seconds", kGauge,
                 "Live: the newest data time each open input has sent (seconds since the "
                 "epoch, observer clock). Far behind the others while it still sends: that "
                 "producer holds the watermark back, or its records come late.");
        for (const ProducerState& p : s.producers)
            if (p.newest_ns)
                w.sample({{"producer", p.producer}, {"input", std::to_string(p.input)}},
                         static_cast<double>(*p.newest_ns) * 1e-9);
        w.family("insert_correlate_held_records", kGauge,
                 "Live: records kept for the windows to come (bounded by the traffic of "
                 "--max-delay + --ttl). Growing without bound: undecided items pile up.")
            .sample({}, s.held);
        w.family("insert_correlate_windows_total", kCounter,
                 "Live: windows joined (one every --interval). Flat: the run is stuck.")
            .sample({}, s.windows);
    }

    if (s.bus) {
        const BusState& b = *s.bus;
        w.family("insert_correlate_bus_partitions_held", kGauge,
                 "--nats: partitions this instance owns now (its share: the partitions divided "
                 "by the instances alive). 0 for long: the others hold them all, or the bus is "
                 "away.")
            .sample({}, b.held);
        w.family("insert_correlate_bus_instances", kGauge,
                 "--nats: instances alive at the last look at the leases, this one included.")
            .sample({}, b.members);
        w.family("insert_correlate_bus_partition_leases_total", kCounter,
                 "--nats: partitions taken (at the start, or over from another instance), lost "
                 "(another instance has them: this one was away past --lease-ttl) and given "
                 "back (to an instance that joined). Lost growing: the instance stalls.")
            .sample({{"event", "taken"}}, b.taken)
            .sample({{"event", "lost"}}, b.lost)
            .sample({{"event", "given_back"}}, b.given_back);
        w.family("insert_correlate_bus_output_records_total", kCounter,
                 "--nats: records decided, by what became of them: published to the output "
                 "stream, or recognised as published before (a partition taken over).")
            .sample({{"outcome", "published"}}, b.published)
            .sample({{"outcome", "recognised"}}, b.recognised);
        w.family("insert_correlate_bus_messages_total", kCounter,
                 "--nats: messages of the partitions, by what became of them: joined, refused "
                 "(another partition count, partition or schema), malformed (skipped), again "
                 "(delivered again, skipped). Refused or malformed growing: a producer is "
                 "misconfigured (stderr names it).")
            .sample({{"outcome", "joined"}}, b.messages)
            .sample({{"outcome", "refused"}}, b.refused)
            .sample({{"outcome", "malformed"}}, b.malformed)
            .sample({{"outcome", "again"}}, b.again);
    }

    const DeliveryCounts am = s.alertmanager.value_or(DeliveryCounts{});
    w.family("insert_correlate_alertmanager_alerts_total", kCounter,
             "Alerts sent to the Alertmanager, by result: sent (accepted; re-sends count), "
             "rejected (a 4xx), dropped (queue full, or undelivered at the end). Non-zero "
             "rejected or dropped: alerts were lost (stderr says why).")
        .sample({{"result", "sent"}}, am.sent)
        .sample({{"result", "rejected"}}, am.rejected)
        .sample({{"result", "dropped"}}, am.dropped);
    w.family("insert_correlate_alertmanager_retries_total", kCounter,
             "POSTs to the Alertmanager that repeated one that failed. Growing: it is "
             "unreachable or refuses.")
        .sample({}, am.retries);
    w.family("insert_correlate_alertmanager_queued", kGauge,
             "Alerts waiting for delivery. Growing: the Alertmanager does not keep up or is "
             "unreachable.")
        .sample({}, am.queued);
    return out;
}

}  // namespace insert::correlate
