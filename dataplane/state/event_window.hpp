// One destination endpoint's events of one kind in one window (records.hpp EventRecord),
// as the engine counts them and as the exporter merges the windows several workers counted
// for the same endpoint: the same rules in both, so that a window's record does not depend
// on how sharding split its sources (SPEC invariant 1). docs/semantics.md "Events".
#pragma once

#include <algorithm>
#include <cstdint>

#include "dataplane/state/records.hpp"

namespace insert::state {

// The window of an event at `ts`: whole seconds since the epoch (times past 2106 share the
// last one; UINT32_MAX means "every window" to WindowMark).
inline uint32_t event_window(uint64_t ts) {
    return static_cast<uint32_t>(std::min<uint64_t>(ts / kEventWindowNs, UINT32_MAX - 1));
}

// An empty window of `kind` events to (ip, qpn).
EventRecord open_window(EventKind kind, const IpAddress& ip, uint32_t qpn, uint32_t window);

// One event: its time, PSN, NAK syndrome, missing PSNs (gap) and the hash of its source
// (SourceSketch::hash). The window's first event is the earliest by (time, PSN, syndrome):
// an order that does not depend on which worker saw which event first.
void add_event(EventRecord& w, uint64_t ts, uint32_t psn, uint8_t syndrome, uint64_t missing,
               uint64_t source_hash);

// The same endpoint, kind and window counted by another worker, into `into`.
void merge_window(EventRecord& into, const EventRecord& other);

}  // namespace insert::state
