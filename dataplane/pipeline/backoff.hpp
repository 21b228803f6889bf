// Waiting for another thread off the hot path (a full ring, an empty pool, an idle
// worker). Spins briefly with rte_pause(), then yields the CPU: replay often runs more
// lcores than cores (4 workers on a 2-core VM), where a pure spin would burn the time
// slice of the very thread it waits for.
#pragma once

#include <rte_pause.h>
#include <sched.h>

namespace insert::pipeline {

class Backoff {
public:
    void pause() noexcept {
        if (spins_ < kSpinsBeforeYield) {
            ++spins_;
            rte_pause();
        } else {
            sched_yield();
        }
    }
    void reset() noexcept { spins_ = 0; }

private:
    static constexpr unsigned kSpinsBeforeYield = 128;
    unsigned spins_ = 0;
};

}  // namespace insert::pipeline
