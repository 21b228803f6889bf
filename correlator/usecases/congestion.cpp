#include "correlator/usecases/congestion.hpp"

#include <algorithm>

#include "correlator/input/host_names.hpp"

namespace insert::correlate {

namespace {

// Floor division for the bin of a (possibly negative) time.
int64_t bin_of(int64_t t, int64_t width) {
    return t >= 0 ? t / width : -((-t + width - 1) / width);
}

}  // namespace

void CongestionTracker::add(const WireMsg& m, std::string_view node, int64_t src_qpn,
                            const AppRef& app, bool same_app, bool same_node) {
    if (m.t_ack == kNone) return;  // no network latency to judge by
    const int64_t net = m.t_ack - m.t_first;
    Recent& r = recent_;
    if (!r.dst || (!same_node && node != r.node)) {
        auto at = dsts_.find(node);
        if (at == dsts_.end()) at = dsts_.emplace(std::string(node), Destination{}).first;
        r = Recent{};
        r.dst = &at->second;
        r.node.assign(node);
    }
    Destination& d = *r.dst;
    d.net.add(net);
    const int64_t key = bin_of(m.t_first, options_.bin_ns);
    if (!r.bin || key != r.bin_key) {
        r.bin = &d.bins[key];
        r.bin_key = key;
        r.has_dst_ip = false;
        r.app = nullptr;
        r.senders = nullptr;
    }
    Bin& b = *r.bin;
    if (!r.has_dst_ip || r.dst_ip != m.dst_ip.bytes) {
        b.dst_ips.insert(m.dst_ip.bytes);
        r.has_dst_ip = true;
        r.dst_ip = m.dst_ip.bytes;
    }
    b.net.add(net);
    ++b.msgs;
    b.retx += m.retx_pkts;
    b.naks += m.naks;
    if (!r.app || (!same_app && !(*r.app_key == app))) {
        const auto at = b.apps.try_emplace(app).first;
        r.app_key = &at->first;
        r.app = &at->second;
        r.senders = nullptr;
    }
    BinApp& a = *r.app;
    a.bytes +=
        m.op == Op::read ? (m.dma_len != kNone ? static_cast<uint64_t>(m.dma_len) : 0) : m.bytes;
    a.net.add(net);
    if (src_qpn == kNone) return;
    const Endpoint sender{m.src_ip.bytes, static_cast<uint32_t>(src_qpn)};
    if (!r.senders) {
        r.senders = &b.senders[app];
    } else if (r.sender == sender) {
        return;
    }
    r.senders->insert(sender);
    r.sender = sender;
}

void CongestionTracker::add_counters(const WireQp& record) {
    if (record.cnps || record.ecn_ce) counters_.push_back(record);
}

namespace {

// A bin outside any episode: its apps' messages count toward their own baselines.
template <class Bin, class AppNets>
void fold_outside(const Bin& b, AppNets& outside) {
    for (const auto& [ref, app] : b.apps) outside[ref].merge(app.net);
}

}  // namespace

int64_t CongestionTracker::decide(const std::string& node, const Destination& d, int64_t until,
                                  AppNets& outside, std::vector<CongestionEpisode>* ongoing,
                                  std::vector<CongestionEpisode>& out) const {
    // The destination's baseline: the 10th percentile of its messages' network latency
    // (an incast can congest most of a run; its quiet start still shows the path).
    const int64_t baseline = d.net.percentile(10).value_or(0);
    const auto congested = [&](const Bin& b) {
        const int64_t p99 = b.net.percentile(99).value_or(0);
        const bool slow = p99 >= baseline * static_cast<int64_t>(options_.latency_factor) &&
                          p99 - baseline >= options_.min_added_ns;
        return slow || b.retx > 0 || b.naks > 0;
    };
    // An episode's first and last bins are congested and contended (two applications or
    // more) or signalled (retransmissions, NAKs); see below.
    const auto edge = [&](const Bin& b) {
        return congested(b) && (b.apps.size() >= 2 || b.retx > 0 || b.naks > 0);
    };
    const auto leading_edge = [&](BinIter first, BinIter last) {
        while (first != last && !edge(first->second)) ++first;
        return first;
    };
    auto it = d.bins.begin();
    while (it != d.bins.end() && it->first < until) {
        if (!congested(it->second)) {
            fold_outside(it->second, outside);
            ++it;
            continue;
        }
        // A run of congested bins, allowing one quiet bin inside it.
        auto first = it, last = it;
        for (auto next = std::next(it); next != d.bins.end() && next->first < until; ++next) {
            if (next->first - last->first > 2) break;
            if (congested(next->second)) last = next;
        }
        // A bin still to come could extend the run: it is decided later.
        if (until != kForever && last->first + 2 >= until) {
            if (const auto from = leading_edge(first, last); ongoing && edge(from->second)) {
                AppNets before = outside;
                for (auto b = first; b != from; ++b) fold_outside(b->second, before);
                if (CongestionEpisode e = make_episode(node, from, last, baseline, before);
                    e.msgs > 0)
                    ongoing->push_back(std::move(e));
            }
            return first->first;
        }
        it = std::next(last);
        // The run's edges where one application alone was slow, with no retransmission or
        // NAK, are one transfer queueing behind itself (or its own jitter), not the
        // episode: it starts and ends with a bin that is contended or signalled.
        const auto from = leading_edge(first, last);
        auto to = last;
        while (to != from && !edge(to->second)) --to;
        for (auto b = first; b != from; ++b) fold_outside(b->second, outside);
        CongestionEpisode e;
        if (edge(from->second)) e = make_episode(node, from, to, baseline, outside);
        if (e.msgs > 0) {
            out.push_back(std::move(e));
            for (auto b = std::next(to); b != it; ++b) fold_outside(b->second, outside);
        } else {
            // Not an episode after all: its bins are outside any.
            for (auto b = from; b != it; ++b) fold_outside(b->second, outside);
        }
    }
    return until;
}

// The episode of bins [first, last]; msgs == 0 when it is not kept.
CongestionEpisode CongestionTracker::make_episode(const std::string& node, BinIter first,
                                                  BinIter last, int64_t baseline,
                                                  const AppNets& outside) const {
    CongestionEpisode e;
    e.node = node;
    std::set<std::array<uint8_t, 16>> ips;
    e.baseline_net_ns = baseline;
    e.t_start_ns = first->first * options_.bin_ns;
    e.t_end_ns = (last->first + 1) * options_.bin_ns;
    std::map<AppRef, BinApp> apps;
    std::map<AppRef, std::set<Endpoint>> senders;
    for (auto b = first;; ++b) {
        e.msgs += b->second.msgs;
        e.retx_pkts += b->second.retx;
        e.naks += b->second.naks;
        ips.insert(b->second.dst_ips.begin(), b->second.dst_ips.end());
        for (const auto& [ref, app] : b->second.apps) {
            BinApp& into = apps[ref];
            into.bytes += app.bytes;
            into.net.merge(app.net);
        }
        for (const auto& [ref, eps] : b->second.senders)
            senders[ref].insert(eps.begin(), eps.end());
        if (b == last) break;
    }
    // p99 over the episode: bins' values are not kept per message, so the episode
    // p99 is the largest bin p99 (a bound that names the worst part of it).
    for (auto b = first;; ++b) {
        e.p99_net_ns = std::max(e.p99_net_ns, b->second.net.percentile(99).value_or(0));
        if (b == last) break;
    }
    if (e.msgs < options_.min_msgs) return {};
    for (const auto& ip : ips) e.dst_ips.push_back(Ip{ip});
    uint64_t bytes = 0;
    for (const auto& [ref, app] : apps) bytes += app.bytes;
    for (const auto& [ref, app] : apps) {
        EpisodeApp a;
        a.app = ref;
        a.msgs = app.net.msgs;
        a.bytes = app.bytes;
        a.bytes_share = bytes ? static_cast<double>(app.bytes) / static_cast<double>(bytes) : 0;
        a.net_ns_mean = app.net.mean_ns();
        a.net_ns_p99 = app.net.stats.percentile(99).value_or(0);
        // A victim's p99 rose above its own outside episodes (or, with no messages there,
        // above the node's baseline) by at least what makes a bin slow: its tail, as a
        // bin's, since the tail is what a latency-sensitive application feels.
        if (const auto own = outside.find(ref); own != outside.end() && own->second.msgs) {
            a.baseline_net_ns_mean = own->second.mean_ns();
            a.baseline_net_ns_p99 = own->second.stats.percentile(99).value_or(0);
            a.excess_ns = a.net_ns_p99 - *a.baseline_net_ns_p99;
        } else {
            a.excess_ns = a.net_ns_p99 - baseline;
        }
        a.victim = a.excess_ns >= options_.min_added_ns;
        e.contributors.push_back(a);
    }
    // CNPs at the QPs that sent the episode's messages, and ECN-CE at the
    // destination, from the endpoint instances whose life overlaps the episode. An
    // endpoint's CNPs count once in the episode's signals, for each app that sent
    // from it (QPN reuse) in its own.
    for (const WireQp& r : counters_) {
        if (r.t_last < e.t_start_ns || r.t_first >= e.t_end_ns) continue;
        if (ips.count(r.ip.bytes)) e.ecn_ce += r.ecn_ce;
        if (!r.cnps) continue;
        bool counted = false;
        for (EpisodeApp& c : e.contributors) {
            const auto eps = senders.find(c.app);
            if (eps == senders.end() || !eps->second.count({r.ip.bytes, r.qpn})) continue;
            c.cnps += r.cnps;
            if (!counted) e.cnps += r.cnps;
            counted = true;
        }
    }
    for (const EpisodeApp& c : e.contributors)
        if (c.victim) e.victims.push_back(c);
    // Contention or a network signal: one transfer queueing behind itself is not.
    const bool signalled = e.cnps || e.ecn_ce || e.retx_pkts || e.naks;
    if (e.contributors.size() < 2 && !signalled) return {};
    std::stable_sort(e.victims.begin(), e.victims.end(),
                     [](const auto& a, const auto& b) { return a.excess_ns > b.excess_ns; });
    std::stable_sort(e.contributors.begin(), e.contributors.end(),
                     [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    return e;
}

namespace {

void order_episodes(std::vector<CongestionEpisode>& episodes) {
    std::sort(episodes.begin(), episodes.end(),
              [](const CongestionEpisode& a, const CongestionEpisode& b) {
                  return std::tie(a.t_start_ns, a.node) < std::tie(b.t_start_ns, b.node);
              });
}

}  // namespace

std::vector<CongestionEpisode> CongestionTracker::episodes() const {
    std::vector<CongestionEpisode> out;
    for (const auto& [node, d] : dsts_) {
        AppNets outside = d.outside;
        decide(node, d, kForever, outside, nullptr, out);
    }
    order_episodes(out);
    return out;
}

std::vector<CongestionEpisode> CongestionTracker::settle(int64_t before_ns) {
    std::vector<CongestionEpisode> out;
    const int64_t until = bin_of(before_ns, options_.bin_ns);
    int64_t kept_from = until;  // the oldest bin any destination still keeps
    for (auto& [node, d] : dsts_) {
        const int64_t undecided = decide(node, d, until, d.outside, nullptr, out);
        d.bins.erase(d.bins.begin(), d.bins.lower_bound(undecided));
        kept_from = std::min(kept_from, undecided);
    }
    // The bins the erased ones were reached through.
    recent_ = Recent{};
    // Counters can only still count toward episodes from the kept bins on.
    const int64_t horizon = kept_from * options_.bin_ns;
    std::erase_if(counters_, [&](const WireQp& r) { return r.t_last < horizon; });
    order_episodes(out);
    return out;
}

std::vector<CongestionEpisode> CongestionTracker::ongoing(int64_t before_ns) const {
    std::vector<CongestionEpisode> out, settled;
    for (const auto& [node, d] : dsts_) {
        AppNets outside = d.outside;
        decide(node, d, bin_of(before_ns, options_.bin_ns), outside, &out, settled);
    }
    order_episodes(out);
    return out;
}

void feed_congestion(CongestionTracker& tracker, const WireMsgs& msgs, const JoinResult& join,
                     const HostModel& model, const HostNames& names,
                     const std::vector<bool>* only) {
    // Consecutive messages nearly always share their requester and responder: their
    // application and node are made once per run of them.
    int64_t node_of = -2;  // the responder `node` names (-1: an untraced one, by its IP)
    Ip node_ip;
    std::string node;
    int64_t app_of = -2;  // the requester `app` names
    AppRef app;
    for (std::size_t i = 0; i < msgs.size(); ++i) {
        if (only && !(*only)[i]) continue;
        const WireMsg& m = msgs[i];
        const int64_t responder = join.responder[i];
        bool same_node = true;
        if (responder >= 0 && responder != node_of) {
            node.assign(names.view(model.qps[static_cast<std::size_t>(responder)].host));
            node_of = responder;
            same_node = false;
        } else if (responder < 0 && (node_of != -1 || !(node_ip == m.dst_ip))) {
            node = m.dst_ip.to_string();  // the node of an untraced responder: its IP
            node_of = -1;
            node_ip = m.dst_ip;
            same_node = false;
        }
        const int64_t r = join.requester[i];
        bool same_app = true;
        if (r >= 0 && r != app_of) {
            const Incarnation& q = model.qps[static_cast<std::size_t>(r)];
            app.owner = qp_owner(q, names);
            app.ip = q.ip;
            app_of = r;
            same_app = false;
        } else if (r < 0) {
            app = AppRef{};
            app.ip = m.src_ip;
            app_of = -1;
            same_app = false;
        }
        const int64_t src_qpn = r >= 0 ? model.qps[static_cast<std::size_t>(r)].qpn : m.src_qpn;
        tracker.add(m, node, src_qpn, app, same_app, same_node);
    }
}

}  // namespace insert::correlate
