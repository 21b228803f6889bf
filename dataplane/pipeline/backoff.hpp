// Waiting for another thread off the hot path (a full ring, an empty pool, an idle
// worker, the end of the workers). Spins briefly with rte_pause(), then yields, then
// sleeps: replay often runs more lcores than cores (4 workers on a 2-core VM) on a shared
// machine, where spinning or sched_yield() loops would burn the CPU time of the very
// thread being waited for (measured: 40% of a replay's CPU in sched_yield before the
// sleep stage). A live port's worker (issue 5) sleeps at most kSleep, far below its
// rx ring's capacity at line rate.
#pragma once

#include <rte_pause.h>
#include <sched.h>
#include <time.h>

namespace insert::pipeline {

class Backoff {
  public:
    // `yields`: how many sched_yield() rounds before sleeping. A live port's worker waits
    // for the NIC, not for another thread, and a sleep there is a frame's added latency
    // (a 20 us nanosleep takes ~100 us on these VMs): it yields for milliseconds first.
    explicit Backoff(unsigned yields = kYields) : yields_(yields) {}
    void pause() noexcept {
        if (spins_ < kSpins) {
            rte_pause();
        } else if (spins_ < kSpins + yields_) {
            sched_yield();
        } else {
            const timespec ts{0, kSleepNs};
            nanosleep(&ts, nullptr);
            return;
        }
        ++spins_;
    }
    void reset() noexcept { spins_ = 0; }

  private:
    static constexpr unsigned kSpins = 64;
    static constexpr unsigned kYields = 16;
    static constexpr long kSleepNs = 20'000;
    unsigned yields_;
    unsigned spins_ = 0;
};

}  // namespace insert::pipeline
