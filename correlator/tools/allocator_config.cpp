// The allocator's configuration, read by jemalloc when it starts (its documented
// `malloc_conf` symbol). A batch run fills a few hundred MB of short-lived arrays - the
// decoded records, per-QP work requests, the join's per-message vectors, the e2e rows -
// each first touched once. On virtual machines fresh memory is slow, so freed pages are
// kept for the next allocation instead of being returned and faulted in again
// (dirty_decay_ms:-1; the process does not shrink after a peak, and the live correlator's
// peak is bounded by --ttl). Arrays above 8 MiB would otherwise go to jemalloc's dedicated
// "oversize" arena, which returns freed memory at once whatever dirty_decay_ms says
// (oversize_threshold:0 turns that arena off): every batch of the live correlator and
// every benchmark run faulted its arrays in again.
//
// Transparent huge pages only where they pay: the big record arrays ask for them
// themselves (input/huge_allocator.hpp). jemalloc's thp:always put every arena on huge
// pages, and zeroing 2 MiB for allocations that touch a part of it made a run 7% slower
// in the benchmark and its system time 3x (docs/performance.md, "The correlator's allocator").
// Built only where jemalloc is.
extern "C" {
const char* malloc_conf = "dirty_decay_ms:-1,oversize_threshold:0";
}
