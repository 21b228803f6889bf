// The allocator's configuration, read by jemalloc when it starts (its documented
// `malloc_conf` symbol). The correlator's records live in a few hundred MB of
// short-lived arrays - per-QP work requests, the join's per-message vectors, the e2e
// rows - first touched once each; on virtual machines a 4 KiB page fault is slow, and
// faulting that memory in took a fifth of a batch run. Transparent huge pages (one fault
// per 2 MiB, the kernel's THP mode `madvise` is enough) and jemalloc's reuse of freed
// memory cut it (docs/performance.md, insert-correlate). Built only where jemalloc is.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:auto";
}
