#include "correlator/output/record_sink.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "correlator/output/record_writer.hpp"
#include "dataplane/common/json_line.hpp"
#include "dataplane/common/version.hpp"

namespace insert::correlate {

namespace {

constexpr std::size_t kFlushBytes = 1 << 20;

}  // namespace

void RecordSink::appended(std::size_t from) {
    if (filter_ && buffer_.size() > from &&
        !filter_(std::string_view(buffer_).substr(from, buffer_.size() - from - 1))) {
        buffer_.resize(from);
        return;
    }
    if (observer_ && buffer_.size() > from)
        observer_(std::string_view(buffer_).substr(from, buffer_.size() - from - 1));
    if (!out_) buffer_.clear();
}

void RecordSink::maybe_flush() {
    if (buffer_.size() >= kFlushBytes) flush();
}

bool RecordSink::flush() {
    if (out_ && out_->is_open() && ok_ && !buffer_.empty()) ok_ = out_->write(buffer_);
    buffer_.clear();
    return ok_ || (out_ && out_->reader_gone());
}

void RecordSink::e2e(const E2eRow& row, const HostNames& names) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    append_e2e(buffer_, row, names);
    appended(from);
    maybe_flush();
}

void RecordSink::lines(std::string_view text) {
    if (!active()) return;
    if (observer_)
        for (std::size_t at = 0; at < text.size();) {
            const std::size_t nl = std::min(text.find('\n', at), text.size());
            observer_(text.substr(at, nl - at));
            at = nl + 1;
        }
    if (!out_) return;
    buffer_.append(text);
    maybe_flush();
}

void RecordSink::learn_cgroups(const std::vector<CgroupName>& cgroups, const HostNames& names) {
    for (const CgroupName& c : cgroups) {
        auto key = std::make_pair(names.name(c.host), c.id);
        const auto at = cgroup_paths_.find(key);
        if (at != cgroup_paths_.end() && (at->second || !c.has_path)) continue;
        std::optional<std::string> path;
        if (c.has_path) path = c.path;
        cgroup_paths_[key] = path;
        if (!active()) continue;
        const std::size_t from = buffer_.size();
        append_cgroup(buffer_, key.first, c.id, path ? &*path : nullptr);
        appended(from);
    }
    maybe_flush();
}

void RecordSink::app(const AppView& a, bool final) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    const auto path = cgroup_paths_.find({a.host, a.cgroup});
    append_app(buffer_, a, final,
               path != cgroup_paths_.end() && path->second ? &*path->second : nullptr);
    appended(from);
    maybe_flush();
}

void RecordSink::pair(const PairView& p, const HostNames& names) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    append_pair(buffer_, p, names);
    appended(from);
    maybe_flush();
}

void RecordSink::clock(const std::string& host, const ClockEstimate& c) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    append_clock(buffer_, host, c);
    appended(from);
    maybe_flush();
}

void RecordSink::alert(const Alert& a) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    append_alert(buffer_, a);
    appended(from);
    maybe_flush();
}

void RecordSink::congestion(const CongestionEpisode& e) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    append_congestion(buffer_, e);
    appended(from);
    maybe_flush();
}

void RecordSink::summary(const SummaryCounts& s) {
    if (!active()) return;
    const std::size_t from = buffer_.size();
    std::string inputs, bad, evicted, alerts, delivery;
    {
        JsonLine obj(alerts);
        for (std::size_t k = 0; k < s.alerts.size(); ++k)
            obj.u(alert_kind_name(static_cast<AlertKind>(k)), s.alerts[k]);
        obj.close();
        JsonLine(delivery)
            .u("sent", s.alertmanager.sent)
            .u("failed", s.alertmanager.failed())
            .u("rejected", s.alertmanager.rejected)
            .u("dropped", s.alertmanager.dropped)
            .u("retries", s.alertmanager.retries)
            .close();
    }
    JsonLine(inputs)
        .u("lines", s.inputs.lines)
        .u("msg", s.inputs.msg)
        .u("qp", s.inputs.qp)
        .u("host", s.inputs.host)
        .u("ignored", s.inputs.ignored)
        .close();
    JsonLine(bad)
        .u("not_json", s.inputs.not_json)
        .u("truncated", s.inputs.truncated)
        .u("bad_field", s.inputs.bad_field)
        .u("unknown_type", s.inputs.unknown_type)
        .u("too_long", s.inputs.too_long)
        .close();
    JsonLine(evicted)
        .u("wrs", s.evicted_wrs)
        .u("msgs", s.evicted_msgs)
        .u("completions", s.evicted_completions)
        .close();
    JsonLine line(buffer_);
    line.s("type", "summary")
        .word("schema", kRecordSchema)  // docs/records.md
        .raw("inputs", inputs)
        .raw("bad", bad);
    if (s.listen.listening) {
        std::string listen;
        JsonLine(listen)
            .u("connections", s.listen.connections)
            .u("refused", s.listen.refused)
            .close();
        line.raw("listen", listen);
    }
    line.u("e2e", s.e2e)
        .u("exact", s.e2e - s.resync)
        .u("resync", s.resync)
        .u("unmatched_wr", s.join.unmatched_wr)
        .u("wire_only", s.join.wire_only)
        .u("src_untraced", s.join.src_untraced)
        .u("src_host_untraced", s.join.src_host_untraced)
        .u("duplicate_msgs", s.join.duplicate_msgs)
        .u("pair_conflicts", s.join.pair_conflicts)
        .u("qps_without_ip", s.join.qps_without_ip)
        .u("recv_matched", s.join.recv_matched)
        .u("late", s.late)
        .raw("evicted", evicted)
        .u("hosts", s.hosts)
        .u("qps", s.qps)
        .u("apps", s.apps)
        .u("pairs", s.pairs)
        .u("trace_drops", s.trace_drops)
        .raw("alerts", alerts)
        .raw("alertmanager", delivery)
        .u("congestion", s.congestion)
        .raw("wall_s", fmt::format("{:.3f}", s.wall_s));
    line.end();
    appended(from);
    maybe_flush();
}

}  // namespace insert::correlate
