#include "dataplane/state/event_window.hpp"

#include <algorithm>
#include <tuple>

namespace insert::state {

EventRecord open_window(EventKind kind, const IpAddress& ip, uint32_t qpn, uint32_t window) {
    EventRecord w;
    w.kind = kind;
    w.ip = ip;
    w.qpn = qpn;
    w.window = window;
    return w;
}

namespace {

// Takes (t_ns, psn, syndrome) from `from` if it is the earlier event.
void keep_first(EventRecord& into, uint64_t t_ns, uint32_t psn, uint8_t syndrome) {
    if (into.count != 0 &&
        std::tie(into.t_ns, into.psn, into.syndrome) <= std::tie(t_ns, psn, syndrome))
        return;
    into.t_ns = t_ns;
    into.psn = psn;
    into.syndrome = syndrome;
}

}  // namespace

void add_event(EventRecord& w, uint64_t ts, uint32_t psn, uint8_t syndrome, uint64_t missing,
               uint64_t source_hash) {
    keep_first(w, ts, psn, syndrome);
    w.t_last_ns = w.count == 0 ? ts : std::max(w.t_last_ns, ts);
    ++w.count;
    w.missing += missing;
    w.sources.add(source_hash);
}

void merge_window(EventRecord& into, const EventRecord& other) {
    if (other.count == 0) return;
    keep_first(into, other.t_ns, other.psn, other.syndrome);
    into.t_last_ns = into.count == 0 ? other.t_last_ns : std::max(into.t_last_ns, other.t_last_ns);
    into.count += other.count;
    into.missing += other.missing;
    into.sources.merge(other.sources);
}

}  // namespace insert::state
