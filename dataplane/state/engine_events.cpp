// Event windows (docs/semantics.md "Events"): every event but `pair` is counted in the
// window of its destination endpoint (ip, qpn), kind and second, with its distinct
// sources, so that a spray from any number of sources to one QP gives one record a second
// per kind. The windows live in a table of their own (not in the parts: a destination's
// sources are parts, often on several workers), and are pushed once the worker's time has
// passed them, followed by a WindowMark with which the exporter merges what several
// workers counted for one destination (dataplane/export/event_merger.hpp).
#include <algorithm>

#include "dataplane/state/engine_impl.hpp"
#include "dataplane/state/event_window.hpp"

namespace insert::state {

void EngineImpl::count_event(EventKind kind, const Endpoint& ep, uint32_t psn, uint64_t ts,
                             uint64_t missing, uint8_t syndrome) noexcept {
    count_event_in(event_window(ts), kind, ep, psn, ts, missing, syndrome);
}

void EngineImpl::count_event_in(uint32_t window, EventKind kind, const Endpoint& ep, uint32_t psn,
                                uint64_t ts, uint64_t missing, uint8_t syndrome) noexcept {
    const uint64_t source = SourceSketch::hash(ep.src_ip);
    bool inserted = false;
    uint32_t* slot = event_index_.insert(EventKey{ep.key, kind}, kNoIndex, &inserted);
    if (!slot) {
        // No room: this event is a window of its own (bounded by the events, counted).
        Record r;
        r.type = RecordType::event;
        r.event = open_window(kind, ep.key.ip, ep.key.qpn, window);
        add_event(r.event, ts, psn, syndrome, missing, source);
        bump(counters_.events_unwindowed);
        push(r);
        return;
    }
    if (inserted) {
        // The pool has a slot for every entry the index can hold.
        *slot = event_windows_.acquire();
        open_windows_[open_count_++] = *slot;
        event_windows_[*slot] = open_window(kind, ep.key.ip, ep.key.qpn, window);
    }
    EventRecord& w = event_windows_[*slot];
    if (w.window != window) {
        // Another window of the same endpoint and kind while this one is open: only when
        // capture time went back, or before the worker closed the window (tests drive the
        // engine without workers). The open one is complete as far as this engine knows.
        Record r;
        r.type = RecordType::event;
        r.event = w;
        push(r);
        w = open_window(kind, ep.key.ip, ep.key.qpn, window);
    }
    add_event(w, ts, psn, syndrome, missing, source);
}

void EngineImpl::close_windows(uint64_t now_ns) noexcept {
    const uint32_t window = event_window(now_ns);
    if (window <= closed_events_) return;
    closed_events_ = window;
    // Timeouts come from ticks; with no part alive (or no idle eviction) none can come
    // before `now`, and a worker that holds nothing must not hold back the exporter's merge
    // of the others' timeout windows until it ticks.
    if (!wheel_on_ || counters_.endpoints_live.load(std::memory_order_relaxed) == 0)
        closed_timeouts_ = std::max(closed_timeouts_, window);
    flush_windows();
}

void EngineImpl::flush_windows() noexcept {
    for (uint32_t k = 0; k < open_count_;) {
        const uint32_t i = open_windows_[k];
        const EventRecord& w = event_windows_[i];
        const uint32_t closed = w.kind == EventKind::timeout ? closed_timeouts_ : closed_events_;
        if (w.window >= closed) {
            ++k;
            continue;
        }
        Record r;
        r.type = RecordType::event;
        r.event = w;
        push(r);
        event_index_.erase(EventKey{{w.ip, w.qpn}, w.kind});
        event_windows_.release(i);
        open_windows_[k] = open_windows_[--open_count_];
    }
    Record mark;
    mark.type = RecordType::mark;
    mark.mark = WindowMark{closed_events_, closed_timeouts_};
    push(mark);
}

}  // namespace insert::state
