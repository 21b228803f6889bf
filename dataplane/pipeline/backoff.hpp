// Waiting for another thread off the hot path (a full ring, an empty pool, an idle
// worker, the end of the workers). Spins briefly with rte_pause(), then yields, then
// sleeps: replay often runs more lcores than cores (4 workers on a 2-core VM) on a shared
// machine, where spinning or sched_yield() loops would burn the CPU time of the very
// thread being waited for (measured: 40% of a replay's CPU in sched_yield before the
// sleep stage). A live port's poller (insert-dp inline, monitor) sleeps at most kSleepNs,
// far below its rx ring's capacity at line rate.
#pragma once

#include <rte_pause.h>
#include <sched.h>
#include <time.h>

namespace insert::pipeline {

// How long a waiter spins (rte_pause, ~40 ns each on these VMs) and then yields before it
// sleeps.
struct BackoffPolicy {
    unsigned spins = 64;
    unsigned yields = 16;
};

// A live port's poller (worker or main lcore) waits for the NIC, not for another thread,
// and every step past spinning is a frame's added latency: a 20 us nanosleep takes ~100 us
// on these VMs, and a sched_yield() on a busy machine hands the core to another task for
// its whole time slice (the 3-5 ms p99 measured over veth). It spins ~1 ms, as DPDK
// pollers do, before it yields for milliseconds and then sleeps.
inline constexpr BackoffPolicy kLivePollBackoff{25'000, 20'000};

class Backoff {
  public:
    explicit Backoff(BackoffPolicy policy = {}) : policy_(policy) {}
    void pause() noexcept {
        if (steps_ < policy_.spins) {
            rte_pause();
        } else if (steps_ < policy_.spins + policy_.yields) {
            sched_yield();
        } else {
            const timespec ts{0, kSleepNs};
            nanosleep(&ts, nullptr);
            return;
        }
        ++steps_;
    }
    void reset() noexcept { steps_ = 0; }

  private:
    static constexpr long kSleepNs = 20'000;
    BackoffPolicy policy_;
    unsigned steps_ = 0;
};

}  // namespace insert::pipeline
