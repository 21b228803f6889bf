#include "correlator/run/partition_join.hpp"

#include <utility>

#include "dataplane/common/host_partition.hpp"

namespace insert::correlate {

namespace {

// The records of an instance's own (its summary), and the names of cgroups that every
// partition's join writes alike: not the output stream's.
bool published_type(std::string_view line) {
    return !line.starts_with(R"({"type":"summary")") && !line.starts_with(R"({"type":"cgroup")");
}

BusOptions one_partition(BusOptions bus, unsigned k) {
    bus.owned = {k};
    return bus;
}

}  // namespace

PartitionJoin::PartitionJoin(unsigned k, const BusOptions& bus, HostNames& names,
                             LiveSettings settings, OutputStream* out,
                             std::function<void(std::string_view)> observe,
                             std::function<void(unsigned, std::string_view)> publish,
                             const std::vector<uint64_t>& published)
    : k_(k),
      observe_(std::move(observe)),
      publish_(std::move(publish)),
      sink_(out),
      engine_(names, mute_while_catching_up(std::move(settings)), sink_) {
    for (const uint64_t h : published) ++recognise_[h];
    std::string error;
    scope_.load(one_partition(bus, k), error);  // the hosts file loaded once already
    sink_.set_filter([this](std::string_view l) { return !recognised(l); });
    sink_.set_observer([this](std::string_view l) { line(l); });
}

LiveSettings PartitionJoin::mute_while_catching_up(LiveSettings s) {
    s.owns = [this](const Ip& ip) { return scope_.owns(ip); };
    const auto mute = [this](auto told) {
        return [this, told = std::move(told)](const auto& x) {
            if (told && !catching_up()) told(x);
        };
    };
    s.on_alert_opened = mute(std::move(s.on_alert_opened));
    s.on_alert_closed = mute(std::move(s.on_alert_closed));
    s.on_episode_opened = mute(std::move(s.on_episode_opened));
    s.on_episode_closed = mute(std::move(s.on_episode_closed));
    return s;
}

bool PartitionJoin::recognised(std::string_view l) {
    if (recognise_.empty() || !published_type(l)) return false;
    const auto it = recognise_.find(fnv1a64(l));
    if (it == recognise_.end()) return false;
    if (--it->second == 0) recognise_.erase(it);
    ++counts_.recognised;
    return true;
}

void PartitionJoin::line(std::string_view l) {
    if (observe_) observe_(l);
    if (!publish_ || !published_type(l)) return;
    buffer_.assign(l);
    buffer_ += '\n';
    publish_(k_, buffer_);
    ++counts_.published;
}

void add_summary(SummaryCounts& to, const SummaryCounts& from) {
    to.inputs.add(from.inputs);
    to.join += from.join;
    to.e2e += from.e2e;
    to.resync += from.resync;
    to.late += from.late;
    to.evicted_wrs += from.evicted_wrs;
    to.evicted_msgs += from.evicted_msgs;
    to.evicted_completions += from.evicted_completions;
    to.hosts = std::max(to.hosts, from.hosts);  // every partition's join sees every host
    to.qps += from.qps;
    to.apps += from.apps;
    to.pairs += from.pairs;
    to.trace_drops = std::max(to.trace_drops, from.trace_drops);  // the control plane's
    for (std::size_t i = 0; i < to.alerts.size(); ++i) to.alerts[i] += from.alerts[i];
    to.congestion += from.congestion;
}

}  // namespace insert::correlate
