// Keeping the engines' tables resident: what an appliance needs, and what the pipeline
// benchmark measures (the steady state of an appliance, not the kernel's page faults).
#pragma once

namespace insert::pipeline {

// Locks the memory the process maps from here on (mlockall MCL_FUTURE): the engines'
// tables, mapped next, are then populated when they are created instead of page by page
// on first touch. Returns false, after one warning in the `insert.pipeline` log, if the lock
// is not allowed (not root and a finite `ulimit -l`) or fails.
bool lock_future_memory();

}  // namespace insert::pipeline
