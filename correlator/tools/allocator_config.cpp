// The allocator's configuration, read by jemalloc when it starts (its documented
// `malloc_conf` symbol), then tuned for the kind of run.
//
// A live run runs for days, and its windows' arrays come and go at every --interval, their
// size following the traffic: freed pages go back to the system after a second, at once
// (muzzy_decay_ms:0: MADV_DONTNEED rather than MADV_FREE, whose pages the kernel counts as
// resident until it needs them). Kept forever, they made its resident memory ratchet up
// to each new peak (the soak test: 144 -> 287 MB over 20M records; flat at 50-65 MB this
// way).
//
// A batch run fills a few hundred MB of short-lived arrays - the decoded records, per-QP
// work requests, the join's per-message vectors, the e2e rows - each first touched once.
// On virtual machines fresh memory is slow, so a batch run keeps freed pages for the next
// allocation instead of returning them and faulting them in again
// (tune_allocator_for_batch_run: dirty_decay_ms -1, the process does not shrink after a
// peak). Arrays above 8 MiB would otherwise go to jemalloc's dedicated "oversize" arena,
// which returns freed memory at once whatever dirty_decay_ms says (oversize_threshold:0
// turns that arena off): every benchmark run faulted its arrays in again.
//
// Transparent huge pages only where they pay: the big record arrays ask for them
// themselves (input/huge_allocator.hpp). jemalloc's thp:always put every arena on huge
// pages, and zeroing 2 MiB for allocations that touch a part of it made a run 7% slower
// in the benchmark and its system time 3x (docs/performance.md, "The correlator's allocator").
#include "correlator/tools/allocator.hpp"

#ifdef INSERT_JEMALLOC
#include <jemalloc/jemalloc.h>

#include <cerrno>
#include <cstdio>
#include <string>

extern "C" {
const char* malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0,oversize_threshold:0";
}

namespace insert::correlate {

void tune_allocator_for_batch_run() {
    ssize_t keep = -1;  // for arenas made from now on, then for each arena there is
    unsigned arenas = 0;
    std::size_t size = sizeof arenas;
    bool ok = mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &keep, sizeof keep) == 0 &&
              mallctl("arenas.narenas", &arenas, &size, nullptr, 0) == 0;
    for (unsigned i = 0; ok && i < arenas; ++i) {
        const std::string name = "arena." + std::to_string(i) + ".dirty_decay_ms";
        // An arena not initialized yet (EFAULT) takes the default set above when it is.
        const int rc = mallctl(name.c_str(), nullptr, nullptr, &keep, sizeof keep);
        ok = rc == 0 || rc == EFAULT;
    }
    if (!ok) std::fprintf(stderr, "insert-correlate: warning: jemalloc refused dirty_decay_ms\n");
}

}  // namespace insert::correlate
#else
namespace insert::correlate {

void tune_allocator_for_batch_run() {}  // the C library's malloc as it is

}  // namespace insert::correlate
#endif
