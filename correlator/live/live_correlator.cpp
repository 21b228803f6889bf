#include "correlator/live/live_correlator.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "correlator/join/correlation.hpp"

namespace insert::correlate {

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// Offences kept for the alerts of the end of the run: a flood beyond this is counted only.
constexpr std::size_t kMaxOffences = 1'000'000;
// Alerts and episodes kept for the terminal report at the end of a run that may last days
// (it shows 20 of each); all are written and counted as they come.
constexpr std::size_t kKeptForReport = 64;

int64_t saturating_sub(int64_t a, int64_t b) {
    if (a == kMax) return kMax;
    if (a == kMin) return kMin;
    return a - b;
}

}  // namespace

LiveCorrelator::LiveCorrelator(HostNames& names, LiveSettings settings, RecordSink& sink)
    : names_(names),
      settings_(std::move(settings)),
      sink_(sink),
      tracker_(settings_.security, true),
      congestion_(settings_.congestion) {}

int64_t LiveCorrelator::theta(uint32_t host) const {
    if (host < clocks_.size()) return clocks_[host].offset;
    return estimate_clock({}, names_.name(host), settings_.clock).offset;
}

void LiveCorrelator::note(uint32_t stream, int64_t t) {
    Stream& s = streams_[stream];
    s.newest = std::max(s.newest, t);
    s.seen = true;
    if (last_watermark_ != kMin && t < last_watermark_) ++late_;
}

void LiveCorrelator::add(uint32_t stream, Ingested& block) {
    if (stream >= streams_.size()) streams_.resize(stream + 1);
    if (!block.cgroups.empty()) sink_.learn_cgroups(block.cgroups, names_);
    const int64_t newest_before = streams_[stream].newest;
    for (WireMsg& m : block.msgs) {
        note(stream, m.t_first);
        msgs_.push_back(m);
    }
    for (WireQp& q : block.qps) {
        note(stream, q.t_last);
        qps_.push_back(q);
    }
    for (const HostTick& t : block.ticks) note(stream, t.wall - theta(t.host));
    for (HostEvent& e : block.events) {
        note(stream, e.wall - theta(e.host));
        // `lost` records stay for the windows after them (injected_message looks for trace
        // losses near a message); they are counted here, once.
        if (e.kind == HostKind::lost) trace_drops_ += e.u.lost.drops;
        events_.push_back(e);
    }
    // Progress is data time moving on: a stream that sends only records older than its
    // newest (insert-dp's periodic `qp` records of a quiet link) is as good as silent.
    if (streams_[stream].newest > newest_before)
        streams_[stream].last_data = std::chrono::steady_clock::now();
}

// docs/correlation.md 7: the oldest, over the streams still sending, of their newest time
// minus --max-delay. A stream whose data time stood still for --max-delay of wall time
// (silent, or sending only older records) holds nothing back; when every stream is silent
// or ended, everything seen is settled. A stream whose connection
// closed holds the watermark as a silent one does: a producer that reconnects within
// --max-delay (a restart) goes on where it stopped, its records not late.
int64_t LiveCorrelator::watermark(bool final) const {
    if (final) return kMax;
    const auto now = std::chrono::steady_clock::now();
    const auto quiet = std::chrono::nanoseconds(settings_.max_delay_ns);
    int64_t w = kMax, newest = kMin;
    bool active = false;
    for (const Stream& s : streams_) {
        if (!s.seen) continue;
        newest = std::max(newest, s.newest);
        if (now - s.last_data < quiet) {
            w = std::min(w, saturating_sub(s.newest, settings_.max_delay_ns));
            active = true;
        }
    }
    return active ? w : newest;
}

// What one window works on: the batch join over everything kept, and what it decides.
struct LiveCorrelator::Window {
    bool final = false;
    int64_t watermark = 0;
    int64_t cutoff = 0;  // --ttl behind the watermark (observer clock)
    HostModel model;
    JoinResult join;
    std::vector<bool> consumed;                 // per host record: used or decided, forgotten after
    std::vector<bool> dropped;                  // per message: decided (emitted or unmatched)
    std::vector<bool> matched;                  // per message: has a work request in this join
    std::vector<std::vector<bool>> wr_matched;  // per QP, per work request
    // Alignment is monotonic: what lies before an emitted pair of its QP in either order
    // can never match any more. Per QP: the last emitted work request and message position.
    std::vector<int64_t> last_wr, last_pos;

    bool behind_emitted(std::size_t msg) const {
        return join.requester[msg] >= 0 &&
               join.position[msg] < last_pos[static_cast<std::size_t>(join.requester[msg])];
    }
};

int64_t LiveCorrelator::host_cutoff(const Window& win, uint32_t host) const {
    return win.final ? kMax : win.cutoff + theta(host);
}

void LiveCorrelator::window(bool final) {
    const int64_t w = watermark(final);
    if (events_.empty() && msgs_.empty() && qps_.empty()) return;
    Window win;
    win.final = final;
    win.watermark = w;
    win.cutoff = final ? kMax : saturating_sub(w, settings_.ttl_ns);
    join_window(win);
    emit_matched(win);
    find_behind_emitted(win);
    decide_unmatched_msgs(win);
    decide_unmatched_wrs(win);
    check_security(win);
    feed_congestion_window(win);
    attribute_qp_records_window(win);
    retire_exited_apps(win);
    forget_decided(win);
    last_watermark_ = std::max(last_watermark_, w == kMax ? last_watermark_ : w);
    sink_.flush();
}

// The batch join over everything kept, with the clock bounds of what was emitted before.
void LiveCorrelator::join_window(Window& win) {
    win.model = build_host_model(events_, names_);
    win.join = join_batch(win.model, msgs_, names_, settings_.clock, &history_);
    clocks_ = win.join.clocks;
    if (host_has_qp_.size() < names_.size()) host_has_qp_.resize(names_.size(), false);
    for (const Incarnation& q : win.model.qps)
        if (owns(q.ip)) host_has_qp_[q.host] = true;
    counts_.duplicate_msgs += win.join.counts.duplicate_msgs;
    win.consumed.assign(events_.size(), false);
    win.dropped.assign(msgs_.size(), false);
    win.matched.assign(msgs_.size(), false);
    win.wr_matched.resize(win.model.qps.size());
    for (std::size_t q = 0; q < win.model.qps.size(); ++q)
        win.wr_matched[q].assign(win.model.qps[q].wrs.size(), false);
}

// A message decided: it and the receive completion it took are forgotten.
void LiveCorrelator::forget_msg(Window& win, std::size_t i) {
    win.dropped[i] = true;
    if (win.join.recv_event[i] >= 0) {
        win.consumed[static_cast<std::size_t>(win.join.recv_event[i])] = true;
        ++counts_.recv_matched;
    }
    if (win.join.source[i] == SourceState::assigned_conflict) ++counts_.pair_conflicts;
}

// Matched messages behind the watermark, with their completion or --ttl old.
void LiveCorrelator::emit_matched(Window& win) {
    std::vector<ClockBounds>& bounds = history_.bounds;
    if (bounds.size() < names_.size()) bounds.resize(names_.size());
    for (const E2eRow& row : make_e2e_rows(win.join, win.model, msgs_)) {
        const auto i = static_cast<std::size_t>(row.msg - msgs_.data());
        const auto qi = static_cast<std::size_t>(row.requester - win.model.qps.data());
        win.matched[i] = true;
        win.wr_matched[qi][static_cast<std::size_t>(row.wr - row.requester->wrs.data())] = true;
        if (row.msg->t_first > win.watermark) continue;
        // Complete: its own completion polled, or (unsignaled) the one that covers it.
        const bool complete = row.wr->t_poll != kNone || row.wr->t_covered != kNone;
        if (!complete && !(win.final || row.msg->t_first < win.cutoff)) continue;
        if (!complete && !win.final) ++evicted_completions_;
        if (owns(row.msg->src_ip)) {  // else another instance's (the requester's partition)
            sink_.e2e(row, names_);
            apps_.add_row(row, names_);
            ++e2e_;
            resync_ += row.resync;
        }
        bounds[row.requester->host].add(row.wr->wall, row.msg->t_first, row.wr->t_poll,
                                        row.msg->t_ack);
        history_.covered.insert(JoinHistory::key(*row.requester));
        forget_msg(win, i);
        win.consumed[row.wr->event] = true;
        if (row.wr->completion_event >= 0)
            win.consumed[static_cast<std::size_t>(row.wr->completion_event)] = true;
    }
}

void LiveCorrelator::find_behind_emitted(Window& win) {
    const JoinResult& join = win.join;
    win.last_wr.assign(win.model.qps.size(), -1);
    win.last_pos.assign(win.model.qps.size(), -1);
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        if (!win.dropped[i] || join.requester[i] < 0 || !win.matched[i]) continue;
        const auto q = static_cast<std::size_t>(join.requester[i]);
        win.last_pos[q] = std::max<int64_t>(win.last_pos[q], join.position[i]);
    }
    for (const E2eMatch& e : join.matches)
        if (win.dropped[e.msg]) win.last_wr[e.qp] = std::max<int64_t>(win.last_wr[e.qp], e.wr);
}

// How far host `host`'s true offset may lie above the one in use (ns): 0 for a given
// offset, up to the upper bound for an estimated one; -1 when nothing bounds it from above.
int64_t LiveCorrelator::clock_uncertainty(uint32_t host) const {
    const ClockEstimate e = host < clocks_.size()
                                ? clocks_[host]
                                : estimate_clock({}, names_.name(host), settings_.clock);
    if (e.source == ClockSource::option || e.source == ClockSource::same_clock) return 0;
    if (e.source == ClockSource::midpoint && e.consistent) return e.bounds.hi - e.offset;
    return -1;
}

// docs/correlation.md 7: a message of a traced QP that no work request can match any more,
// decided at once rather than --ttl later. Every work request its QP has posted is matched
// to another message, and every post_send that could precede its first packet is in: the
// watermark is past that packet by the host clock's uncertainty (a post at host time t is
// at t - theta on the observer's clock, and the true theta is at most the bound `hi`).
// What could still match it is a work request posted after its first packet left - no
// cause of it; the batch join pairs such a request with it only if their op, length,
// address and rkey all agree (a forger who guessed the next request exactly).
bool LiveCorrelator::no_wr_can_match(const Window& win, std::size_t i) const {
    if (win.join.source[i] != SourceState::assigned || win.join.requester[i] < 0) return false;
    const auto q = static_cast<std::size_t>(win.join.requester[i]);
    if (win.join.unmatched_wr[q] != 0) return false;
    const int64_t uncertainty = clock_uncertainty(win.model.qps[q].host);
    return uncertainty >= 0 && msgs_[i].t_first < saturating_sub(win.watermark, uncertainty);
}

// Unmatched messages --ttl behind, behind an emitted pair, or that nothing can match.
void LiveCorrelator::decide_unmatched_msgs(Window& win) {
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        if (win.matched[i]) continue;
        const bool forced = !(win.final || win.behind_emitted(i) || no_wr_can_match(win, i));
        if (forced && msgs_[i].t_first >= win.cutoff) continue;
        switch (win.join.source[i]) {
            case SourceState::assigned:
            case SourceState::assigned_conflict:
                ++counts_.wire_only;
                break;
            case SourceState::untraced_qp:
                ++counts_.src_untraced;
                break;
            case SourceState::untraced_host:
                ++counts_.src_host_untraced;
                break;
        }
        if (forced) ++evicted_msgs_;
        forget_msg(win, i);
    }
}

// Unmatched work requests and untaken completions --ttl behind; QPs that ended --ttl ago.
void LiveCorrelator::decide_unmatched_wrs(Window& win) {
    for (std::size_t qi = 0; qi < win.model.qps.size(); ++qi) {
        const Incarnation& q = win.model.qps[qi];
        const int64_t limit = host_cutoff(win, q.host);
        for (std::size_t k = 0; k < q.wrs.size(); ++k) {
            const bool behind = static_cast<int64_t>(k) < win.last_wr[qi];
            if (win.wr_matched[qi][k] || !(win.final || q.wrs[k].wall < limit || behind)) continue;
            win.consumed[q.wrs[k].event] = true;
            ++counts_.unmatched_wr;
            apps_.add_unmatched(q, 1, names_);
            if (!win.final && !behind) ++evicted_wrs_;
        }
        for (const auto* list : {&q.send_completions, &q.recv_completions})
            for (const Completion& c : *list)
                if (win.final || c.wall < limit) win.consumed[c.event] = true;
        // Forgotten after this window (the final window counts every QP it has).
        if (!win.final && q.t_end != kForever && q.t_end < limit) {
            history_.covered.erase(JoinHistory::key(q));
            paired_.erase(JoinHistory::key(q));
            ++qps_retired_;
            counts_.qps_without_ip += !q.has_ip;
            apps_.forget(q);
        }
    }
}

// Security (docs/correlation.md 8): a message's rules are applied once it is behind the
// watermark, where what its hosts knew at its time is in - all but injected_message, which
// waits for the join's verdict on the message. Offences become alerts as their episodes
// end: each is written then, and fired as soon as it exists.
void LiveCorrelator::check_security(Window& win) {
    std::vector<bool> due(msgs_.size(), false);
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        WireMsg& m = msgs_[i];
        if (m.checked || !(win.final || win.dropped[i] || m.t_first <= win.watermark)) continue;
        due[i] = m.checked = true;
    }
    const RuleSet injected = rule_bit(AlertKind::injected_message);
    std::vector<Offence> found = find_offences(msgs_, win.join, win.model, names_,
                                               settings_.security, &due, kEveryRule & ~injected);
    std::vector<Offence> injections = find_offences(msgs_, win.join, win.model, names_,
                                                    settings_.security, &win.dropped, injected);
    found.insert(found.end(), injections.begin(), injections.end());
    feed_origins(win, found);
    add_offences(found);
    // Every message up to the watermark has been checked; a message still undecided may
    // yet be injected.
    const int64_t settled = win.final ? kMax : saturating_sub(win.watermark, -1);
    int64_t injected_settled = settled;
    for (std::size_t i = 0; i < msgs_.size(); ++i)
        if (!win.dropped[i]) injected_settled = std::min(injected_settled, msgs_[i].t_first);
    // Opened before closed: an alert that opens and ends in one window is told in order.
    for (const Alert& a : tracker_.take_opened())
        if (settings_.on_alert_opened) settings_.on_alert_opened(a);
    for (Alert& a : tracker_.settle(settled, injected_settled)) {
        sink_.alert(a);
        if (settings_.on_alert_closed) settings_.on_alert_closed(a);
        ++alert_counts_[static_cast<std::size_t>(a.kind)];
        if (alerts_.size() < kKeptForReport) alerts_.push_back(std::move(a));
    }
}

// evidence.origin (docs/correlation.md 8), as a batch run has it: each offence that wants
// it asks; the messages decided in this window - and those of untraced sources behind the
// watermark, which no work request can ever match - go to the feed; then each address's
// messages, up to its oldest one still undecided, feed the book in data time order and
// answer the questions on the way. An offence not answered yet waits in the tracker (its
// alert is not written before its first offence is answered).
void LiveCorrelator::feed_origins(Window& win, std::vector<Offence>& found) {
    for (Offence& o : found) {
        if (!wants_origin(o.kind)) continue;
        o.origin = compare_origin(o.msg.origin, std::nullopt);
        if (o.msg.origin.known) o.origin_query = origins_.add_query(o.msg);
    }
    std::unordered_map<Ip, int64_t, IpHash> undecided;  // per address, its oldest such message
    for (std::size_t i = 0; i < msgs_.size(); ++i) {
        WireMsg& m = msgs_[i];
        if (!m.origin.known || m.origin_fed) continue;
        const SourceState source = win.join.source[i];
        const bool untraced =
            (source == SourceState::untraced_qp || source == SourceState::untraced_host) &&
            m.t_first <= win.watermark;
        if (win.dropped[i] || untraced) {
            m.origin_fed = true;
            origins_.add_message(OriginNote::of(m, win.join.wire[i] == WireState::matched));
        } else if (auto [it, fresh] = undecided.try_emplace(m.src_ip, m.t_first); !fresh) {
            it->second = std::min(it->second, m.t_first);
        }
    }
    const int64_t all_in = win.final ? kMax : win.watermark;
    const auto answers = origins_.advance([&](const Ip& ip) {
        const auto it = undecided.find(ip);
        return it == undecided.end() ? all_in : std::min(all_in, it->second);
    });
    std::unordered_map<uint64_t, const OriginEvidence*> by_query;
    for (const auto& [query, evidence] : answers) by_query[query] = &evidence;
    for (Offence& o : found)
        if (const auto it = by_query.find(o.origin_query); o.origin_query && it != by_query.end()) {
            o.origin = *it->second;
            o.origin_query = 0;
        }
    tracker_.resolve_origins(answers);
    if (!win.final) origins_.book().forget_before(win.cutoff);
}

void LiveCorrelator::add_offences(const std::vector<Offence>& found) {
    for (const Offence& o : found) {
        // Decided where the source's messages and posts all are (docs/scale-out.md).
        if (!owns(o.source_ip)) continue;
        if (tracker_.offences_held() >= kMaxOffences) {
            ++offences_dropped_;
            continue;
        }
        tracker_.add(o);
    }
}

// Every message before the cutoff has been fed: episodes that ended before it are decided
// now, and their bins forgotten.
void LiveCorrelator::feed_congestion_window(Window& win) {
    // Only toward this run's own destinations: their partitions hold all their messages.
    std::vector<bool> fed = win.dropped;
    if (settings_.owns)
        for (std::size_t i = 0; i < msgs_.size(); ++i) fed[i] = fed[i] && owns(msgs_[i].dst_ip);
    feed_congestion(congestion_, msgs_, win.join, win.model, names_, &fed);
    if (win.final) return;
    for (CongestionEpisode& e : congestion_.settle(win.cutoff)) close_episode(std::move(e));
    // Episodes still going on at the watermark are told as they stand, once.
    if (!settings_.on_episode_opened) return;
    const auto ongoing = congestion_.ongoing(saturating_sub(win.watermark, -1));
    for (const CongestionEpisode& e : ongoing)
        if (episodes_fired_.try_emplace({e.node, e.t_start_ns}, e).second)
            settings_.on_episode_opened(e);
    withdraw_told(win.cutoff, ongoing);
}

void LiveCorrelator::withdraw_told(int64_t before_ns,
                                   const std::vector<CongestionEpisode>& ongoing) {
    std::erase_if(episodes_fired_, [&](const auto& fired) {
        const CongestionEpisode& told = fired.second;
        if (told.t_end_ns > before_ns) return false;  // not decided yet
        for (const CongestionEpisode& e : ongoing)
            if (e.node == told.node && e.t_start_ns == told.t_start_ns) return false;
        if (settings_.on_episode_closed) settings_.on_episode_closed(told);
        return true;
    });
}

void LiveCorrelator::close_episode(CongestionEpisode e) {
    sink_.congestion(e);
    const std::size_t told = std::erase_if(episodes_fired_, [&](const auto& fired) {
        return fired.first.first == e.node && fired.first.second <= e.t_end_ns;
    });
    // Decided whole, never seen going on (the watermark passed all of it in one window: a
    // partition's join catching up, a window that came late): told now, as it was, then
    // ended - what is decided is always told.
    if (told == 0 && settings_.on_episode_opened) settings_.on_episode_opened(e);
    if (settings_.on_episode_closed) settings_.on_episode_closed(e);
    ++episode_count_;
    if (episodes_.size() < kKeptForReport) episodes_.push_back(std::move(e));
}

// Dataplane counters: final records (all at the end) go to their applications. A QP's
// `pair` record is decided with the latest record of its endpoint, which is the final one:
// it is written when that arrives (the QP's control records may be forgotten by the end),
// the others' at the end, as the batch run writes them.
void LiveCorrelator::attribute_qp_records_window(Window& win) {
    keep_latest_records(qps_);
    if (win.final) {
        const auto latest_of = attribute_qp_records(qps_, win.model, clocks_, apps_, names_);
        write_pairs(win, latest_of);
        final_qps_ = win.model.qps.size();
        for (const WireQp& r : qps_) congestion_.add_counters(r);
        for (const Incarnation& q : win.model.qps) counts_.qps_without_ip += !q.has_ip;
        qps_.clear();
        return;
    }
    WireQps finals;
    std::erase_if(qps_, [&](const WireQp& r) {
        if (r.final) finals.push_back(r);
        return r.final;
    });
    write_pairs(win, attribute_qp_records(finals, win.model, clocks_, apps_, names_));
    for (const WireQp& r : finals) congestion_.add_counters(r);
}

void LiveCorrelator::write_pairs(const Window& win, const std::vector<const WireQp*>& latest_of) {
    for (const PairView& p : make_pairs(win.model, latest_of, names_)) {
        if (!owns(p.qp->ip)) continue;
        if (!paired_.insert(JoinHistory::key(*p.qp)).second) continue;  // written before
        sink_.pair(p, names_);
        ++pairs_;
    }
}

// Applications of processes that exited --ttl ago: their final record, then forgotten.
void LiveCorrelator::retire_exited_apps(Window& win) {
    if (win.final) return;
    for (const Process& p : win.model.processes)
        if (p.t_exit != kForever && p.t_exit < host_cutoff(win, p.host))
            apps_.retire_process(p.host, p.pid, names_, [&](const AppView& app) {
                sink_.app(app, true);
                ++apps_retired_;
            });
}

// Forget what was used or decided, and what ended --ttl ago.
void LiveCorrelator::forget_decided(Window& win) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < events_.size(); ++i) {
        const bool needed = win.model.needed_until[i] == kForever ||
                            win.model.needed_until[i] >= host_cutoff(win, events_[i].host);
        if (!win.consumed[i] && needed && !win.final) events_[kept++] = events_[i];
    }
    events_.resize(kept);
    kept = 0;
    for (std::size_t i = 0; i < msgs_.size(); ++i)
        if (!win.dropped[i]) msgs_[kept++] = msgs_[i];
    msgs_.resize(kept);
}

void LiveCorrelator::write_apps(bool final) {
    for (const AppView* a : apps_.apps()) sink_.app(*a, final);
    sink_.flush();
}

std::vector<std::pair<std::string, ClockEstimate>> LiveCorrelator::clocks() const {
    std::vector<std::pair<std::string, ClockEstimate>> out;
    for (uint32_t h = 0; h < host_has_qp_.size(); ++h) {
        if (!host_has_qp_[h]) continue;
        const ClockBounds b = h < history_.bounds.size() ? history_.bounds[h] : ClockBounds{};
        out.emplace_back(names_.name(h), estimate_clock(b, names_.name(h), settings_.clock));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

void LiveCorrelator::finish(SummaryCounts& s) {
    for (std::size_t k = 0; k < alert_counts_.size(); ++k) s.alerts[k] = alert_counts_[k];
    for (CongestionEpisode& e : congestion_.episodes()) close_episode(std::move(e));
    withdraw_told(kMax, {});
    s.congestion = episode_count_;
    if (offences_dropped_)
        std::fprintf(stderr,
                     "insert-correlate: %llu offences beyond %zu held at once were not kept "
                     "for alerts\n",
                     static_cast<unsigned long long>(offences_dropped_), kMaxOffences);
    write_apps(true);
    const auto host_clocks = clocks();
    for (const auto& [host, clock] : host_clocks) sink_.clock(host, clock);
    s.join = counts_;
    s.e2e = e2e_;
    s.resync = resync_;
    s.late = late_;
    s.evicted_wrs = evicted_wrs_;
    s.evicted_msgs = evicted_msgs_;
    s.evicted_completions = evicted_completions_;
    s.hosts = host_clocks.size();
    s.qps = qps_retired_ + final_qps_;
    s.apps = apps_retired_ + apps_.size();
    s.pairs = pairs_;
    s.trace_drops = trace_drops_;
}

}  // namespace insert::correlate
