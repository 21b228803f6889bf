// Counters with one writer each - a worker's, an engine's, a lane's - that other threads
// read (the exporter's summary, the telemetry commands, the live view).
#pragma once

#include <atomic>
#include <cstdint>

namespace insert::common {

// Readers load the counters without a lock, and a writer never takes one.
static_assert(std::atomic<uint64_t>::is_always_lock_free, "64-bit counters need lock-free atomics");

// Adds `by` to a counter that only the calling thread writes. A relaxed load and store, not
// fetch_add: with a single writer no increment can come between the two, and fetch_add is
// a locked read-modify-write (lock xadd on x86, a full barrier) on the packet path for
// nothing. A reader on another thread sees a recent value either way, never a torn one.
// `by` = -1 subtracts one (unsigned arithmetic wraps).
inline void bump(std::atomic<uint64_t>& counter, uint64_t by = 1) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace insert::common
