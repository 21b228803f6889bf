// The allocator's configuration, read by jemalloc when it starts (its documented
// `malloc_conf` symbol). A batch run fills a few hundred MB of short-lived arrays - the
// decoded records, per-QP work requests, the join's per-message vectors, the e2e rows -
// each first touched once. On virtual machines fresh memory is slow: its 4 KiB page
// faults took a fifth of a run, and zeroing pages the kernel hands out still takes a
// tenth. So: transparent huge pages (one fault per 2 MiB; the kernel's THP mode
// `madvise` is enough), and freed pages are kept for the next allocation instead of
// being returned and faulted in again (dirty_decay_ms:-1; the process does not shrink
// after a peak, and the live correlator's peak is bounded by --ttl). Arrays above 8 MiB
// would otherwise go to jemalloc's dedicated "oversize" arena, which returns freed memory
// at once whatever dirty_decay_ms says (oversize_threshold:0 turns that arena off): every
// batch of the live correlator and every benchmark run faulted its arrays in again.
// docs/performance.md, insert-correlate. Built only where jemalloc is.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:auto,dirty_decay_ms:-1,oversize_threshold:0";
}
