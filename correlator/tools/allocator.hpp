// The allocator's tuning per kind of run (allocator_config.cpp: jemalloc's configuration
// where it is linked).
#pragma once

namespace insert::correlate {

// A batch run keeps the memory it freed for its next arrays; a live run returns it
// (allocator_config.cpp).
void tune_allocator_for_batch_run();

}  // namespace insert::correlate
