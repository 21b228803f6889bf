#include "dataplane/export/event_merger.hpp"

#include <algorithm>

#include "dataplane/state/event_window.hpp"

namespace insert::exporter {

using state::Record;
using state::RecordType;

std::size_t EventMerger::KeyHash::operator()(const Key& k) const noexcept {
    return state::hash_ip(k.endpoint.ip, k.endpoint.qpn ^
                                             uint64_t{static_cast<uint8_t>(k.kind)} << 32 ^
                                             uint64_t{k.window} << 40);
}

void EventMerger::set_sources(unsigned sources) {
    sources_ = std::max(sources, 1u);
    marks_.assign(sources_, state::WindowMark{});
}

uint32_t EventMerger::passed(bool timeouts) const {
    uint32_t before = UINT32_MAX;
    for (const state::WindowMark& m : marks_)
        before = std::min(before, timeouts ? m.timeouts : m.events);
    return before;
}

void EventMerger::release(ByWindow& held, uint32_t before, const Emit& emit) {
    while (!held.empty() && held.begin()->first < before) {
        for (const Record& r : held.begin()->second) {
            index_.erase(Key{{r.event.ip, r.event.qpn}, r.event.kind, r.event.window});
            emit(r);
        }
        held.erase(held.begin());
    }
}

void EventMerger::take(const Record& r, unsigned source, const Emit& emit) {
    if (r.type == RecordType::mark) {
        if (sources_ == 1 || source >= marks_.size()) return;
        state::WindowMark& m = marks_[source];
        m.events = std::max(m.events, r.mark.events);
        m.timeouts = std::max(m.timeouts, r.mark.timeouts);
        release(events_, passed(false), emit);
        release(timeouts_, passed(true), emit);
        return;
    }
    if (sources_ == 1) {
        emit(r);
        return;
    }
    const state::EventRecord& e = r.event;
    const bool timeout = e.kind == state::EventKind::timeout;
    const Key key{{e.ip, e.qpn}, e.kind, e.window};
    if (const auto found = index_.find(key); found != index_.end()) {
        state::merge_window((timeout ? timeouts_ : events_)[e.window][found->second].event, e);
        return;
    }
    // A window every worker has passed already: capture time went back on this worker
    // after its mark (a capture out of timestamp order). It goes out on its own.
    if (e.window < passed(timeout)) {
        emit(r);
        return;
    }
    std::vector<Record>& window = (timeout ? timeouts_ : events_)[e.window];
    index_.emplace(key, window.size());
    window.push_back(r);
}

void EventMerger::finish(const Emit& emit) {
    release(events_, UINT32_MAX, emit);
    release(timeouts_, UINT32_MAX, emit);  // event_window() is never UINT32_MAX
}

}  // namespace insert::exporter
