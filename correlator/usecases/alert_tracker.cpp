#include "correlator/usecases/alert_tracker.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace insert::correlate {

namespace {

constexpr int64_t kMax = INT64_MAX;

auto victim_key(const Offence& o) {
    return std::make_tuple(o.victim_ip.bytes, o.victim_qpn, o.victim_created);
}

void add_rkey(Alert& a, const WireMsg& m) {
    if (m.rkey == kNone) return;
    const auto rkey = static_cast<uint32_t>(m.rkey);
    if (std::find(a.rkeys.begin(), a.rkeys.end(), rkey) != a.rkeys.end()) return;
    if (a.rkeys.size() < 16) a.rkeys.push_back(rkey);
}

Alert start_alert(AlertKind kind, const Offence& o) {
    Alert a;
    a.kind = kind;
    a.t_ns = a.t_last_ns = o.t;
    a.first = o;
    a.first.kind = kind;
    return a;
}

// One episode of one kind, victim and source: offences [begin, end) in time order.
Alert episode_alert(const Offence* begin, const Offence* end) {
    Alert a = start_alert(begin->kind, *begin);
    for (const Offence* o = begin; o != end; ++o) {
        a.t_last_ns = o->t;
        ++a.count;
        a.pkts += o->msg.pkts;
        a.first.claimed = a.first.claimed || o->claimed;
        add_rkey(a, o->msg);
    }
    a.distinct_rkeys = a.rkeys.size();
    return a;
}

// When some window of `scan_window_ns` of the scan episode [begin, end) first holds the
// threshold: that offence's time, or kNone.
int64_t threshold_reached(const Offence* begin, const Offence* end,
                          const SecurityOptions& options) {
    for (const Offence *lo = begin, *hi = begin; hi < end; ++hi) {
        while (hi->t - lo->t >= options.scan_window_ns) ++lo;
        if (static_cast<uint64_t>(hi - lo + 1) >= options.scan_threshold) return hi->t;
    }
    return kNone;
}

Alert scan_alert(const Offence* begin, const Offence* end, int64_t reached) {
    Alert a = start_alert(AlertKind::rkey_scan, *begin);
    a.t_ns = reached;
    a.t_last_ns = (end - 1)->t;
    a.count = static_cast<uint64_t>(end - begin);
    std::set<std::tuple<std::array<uint8_t, 16>, uint32_t, int64_t>> victims;
    std::set<uint32_t> rkeys;
    for (const Offence* o = begin; o != end; ++o) {
        victims.insert(victim_key(*o));
        a.pkts += o->msg.pkts;
        a.first.claimed = a.first.claimed || o->claimed;
        if (o->msg.rkey != kNone) rkeys.insert(static_cast<uint32_t>(o->msg.rkey));
        add_rkey(a, o->msg);
    }
    a.victims = victims.size();
    a.distinct_rkeys = rkeys.size();
    return a;
}

bool alert_order(const Alert& a, const Alert& b) {
    return std::make_tuple(a.t_ns, a.kind, a.first.victim_ip.bytes, a.first.victim_qpn,
                           a.first.source_ip.bytes) <
           std::make_tuple(b.t_ns, b.kind, b.first.victim_ip.bytes, b.first.victim_qpn,
                           b.first.source_ip.bytes);
}

// Cuts time-sorted offences into episodes of gaps < `gap_ns`; calls `emit(begin, end)` for
// each that ended before `settled_ns` (its last offence `gap_ns` or more before it) and
// erases their offences. The episode still open stays.
template <class Emit>
void cut_episodes(std::vector<Offence>& offences, int64_t gap_ns, int64_t settled_ns, Emit emit) {
    std::size_t begin = 0;
    while (begin < offences.size()) {
        std::size_t end = begin + 1;
        while (end < offences.size() && offences[end].t - offences[end - 1].t < gap_ns) ++end;
        // A later offence has t >= settled_ns: it cannot join an episode whose last offence
        // is gap_ns or more before that.
        const int64_t last = offences[end - 1].t;
        const bool ended =
            settled_ns == kMax || (settled_ns >= INT64_MIN + gap_ns && last <= settled_ns - gap_ns);
        if (!ended) break;
        emit(offences.data() + begin, offences.data() + end);
        begin = end;
    }
    offences.erase(offences.begin(), offences.begin() + static_cast<std::ptrdiff_t>(begin));
}

}  // namespace

void AlertTracker::add(const Offence& o) {
    const EpisodeKey key{o.kind, o.victim_ip.bytes, o.victim_qpn, o.victim_created,
                         o.source_ip.bytes};
    Held& held = episodes_[key];
    // A new episode when nothing of this key is held or the offence is --alert-gap after
    // the newest held: fired as soon as it is known.
    if (track_opened_ && (held.offences.empty() || o.t - held.newest >= options_.alert_gap_ns)) {
        Alert a = start_alert(o.kind, o);
        a.count = 1;
        a.pkts = o.msg.pkts;
        add_rkey(a, o.msg);
        a.distinct_rkeys = a.rkeys.size();
        opened_.push_back(std::move(a));
    }
    held.offences.push_back(o);
    held.newest = std::max(held.newest, o.t);
    ++held_;
    if (security_rule(o.kind).feeds_scan) note_scan(scans_[o.source_ip.bytes], o);
}

// rkey_scan fires once per scan episode, when some window of it reaches the threshold.
void AlertTracker::note_scan(Held& held, const Offence& o) {
    if (!held.offences.empty() && o.t - held.newest >= options_.scan_window_ns)
        held.scan_fired = false;  // a new scan episode
    held.offences.push_back(o);
    held.newest = std::max(held.newest, o.t);
    ++held_;
    if (!track_opened_ || held.scan_fired) return;
    std::vector<Offence> sorted = held.offences;
    std::sort(sorted.begin(), sorted.end(), [](const Offence& a, const Offence& b) {
        return std::make_tuple(a.t, a.msg.psn_first, victim_key(a)) <
               std::make_tuple(b.t, b.msg.psn_first, victim_key(b));
    });
    // The newest episode: from the last gap of --scan-window or more.
    std::size_t begin = sorted.size() - 1;
    while (begin > 0 && sorted[begin].t - sorted[begin - 1].t < options_.scan_window_ns) --begin;
    const Offence* first = sorted.data() + begin;
    const Offence* last = sorted.data() + sorted.size();
    const int64_t reached = threshold_reached(first, last, options_);
    if (reached == kNone) return;
    held.scan_fired = true;
    opened_.push_back(scan_alert(first, last, reached));
}

void AlertTracker::settle_episodes(Held& held, int64_t settled_ns, std::vector<Alert>& out) {
    std::sort(held.offences.begin(), held.offences.end(), [](const Offence& a, const Offence& b) {
        return std::make_tuple(a.t, a.msg.psn_first) < std::make_tuple(b.t, b.msg.psn_first);
    });
    // An alert's evidence is its first offence's: an episode whose first still waits for
    // its origin is not settled (nor any after it), whatever the others wait for.
    for (std::size_t i = 0; i < held.offences.size(); ++i) {
        const Offence& o = held.offences[i];
        const bool starts = i == 0 || o.t - held.offences[i - 1].t >= options_.alert_gap_ns;
        if (starts && o.origin_query != 0) {
            settled_ns = std::min(settled_ns, o.t);
            break;
        }
    }
    const std::size_t before = held.offences.size();
    cut_episodes(held.offences, options_.alert_gap_ns, settled_ns,
                 [&](const Offence* begin, const Offence* end) {
                     out.push_back(episode_alert(begin, end));
                 });
    held_ -= before - held.offences.size();
}

void AlertTracker::settle_scans(Held& held, int64_t settled_ns, std::vector<Alert>& out) {
    std::sort(held.offences.begin(), held.offences.end(), [](const Offence& a, const Offence& b) {
        return std::make_tuple(a.t, a.msg.psn_first, victim_key(a)) <
               std::make_tuple(b.t, b.msg.psn_first, victim_key(b));
    });
    const std::size_t before = held.offences.size();
    cut_episodes(held.offences, options_.scan_window_ns, settled_ns,
                 [&](const Offence* begin, const Offence* end) {
                     const int64_t reached = threshold_reached(begin, end, options_);
                     if (reached != kNone) out.push_back(scan_alert(begin, end, reached));
                 });
    held_ -= before - held.offences.size();
    if (held.offences.empty()) held.scan_fired = false;
}

std::vector<Alert> AlertTracker::settle(int64_t settled_ns, int64_t injected_settled_ns) {
    std::vector<Alert> out;
    for (auto it = episodes_.begin(); it != episodes_.end();) {
        const bool injected = std::get<0>(it->first) == AlertKind::injected_message;
        settle_episodes(it->second, injected ? injected_settled_ns : settled_ns, out);
        it = it->second.offences.empty() ? episodes_.erase(it) : std::next(it);
    }
    for (auto it = scans_.begin(); it != scans_.end();) {
        settle_scans(it->second, settled_ns, out);
        it = it->second.offences.empty() ? scans_.erase(it) : std::next(it);
    }
    std::sort(out.begin(), out.end(), alert_order);
    return out;
}

void AlertTracker::resolve_origins(
    const std::vector<std::pair<uint64_t, OriginEvidence>>& answers) {
    if (answers.empty()) return;
    std::unordered_map<uint64_t, const OriginEvidence*> by_query;
    for (const auto& [query, evidence] : answers) by_query[query] = &evidence;
    for (auto& [key, held] : episodes_) {
        if (!wants_origin(std::get<0>(key))) continue;
        for (Offence& o : held.offences) {
            if (o.origin_query == 0) continue;
            const auto it = by_query.find(o.origin_query);
            if (it == by_query.end()) continue;
            o.origin = *it->second;
            o.origin_query = 0;
        }
    }
}

std::vector<Alert> AlertTracker::take_opened() {
    std::vector<Alert> out = std::move(opened_);
    opened_.clear();
    return out;
}

std::vector<Alert> aggregate_alerts(std::vector<Offence> offences, const SecurityOptions& options) {
    AlertTracker tracker(options, false);
    for (const Offence& o : offences) tracker.add(o);
    return tracker.settle(kMax, kMax);
}

}  // namespace insert::correlate
