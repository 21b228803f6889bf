// One `qp` record from several: an endpoint's parts (one per source IP, docs/semantics.md
// "Sources") are merged by the engine that holds them, and the parts of an endpoint split
// over workers by the exporter. Merging is commutative and associative, so the result does
// not depend on which worker holds which part, or in which order the records arrive (SPEC
// invariant 1).
#pragma once

#include "dataplane/state/records.hpp"

namespace insert::state {

// Adds `other`'s counters to `into`; `transport` becomes the family of the earliest first
// non-CNP packet of the two (ties: RC, UC, UD, XRC in that order), and the peer, when both
// are paired (an endpoint in two connections), the one with the lower IP, then QPN.
// Latency fields, flags and src_ip are left alone.
void merge_qp(QpRecord& into, const QpRecord& other);

}  // namespace insert::state
