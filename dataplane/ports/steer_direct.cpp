// Direct steering: one worker and no hardware plan. The worker polls every queue of every
// port itself and applies the emulated plan inline when there is one - no extra hop; the
// main lcore only waits for the stop.
#include <rte_prefetch.h>

#include <chrono>
#include <thread>

#include "dataplane/ports/emulated_plan.hpp"
#include "dataplane/ports/polled_steering.hpp"

namespace insert::ports {

namespace {

// The main lcore's wait: 10 ms bounds the reaction to a stop (SIGINT, --duration) with 100
// wake-ups a second on the core it shares.
constexpr auto kIdleMainSleep = std::chrono::milliseconds(10);

class DirectSteering final : public PolledSteering {
  public:
    explicit DirectSteering(const Context& context) : PolledSteering(context, false) {
        for (const PortInfo& p : context.ports.ports())
            for (uint16_t q = 0; q < p.queues; ++q) lane(0).rx.push_back({p.id, q});
        for (const auto& plan : context.plans) emulated_ = emulated_ || plan->emulated;
    }
    SteerMode mode() const override { return SteerMode::direct; }

  private:
    // With an emulated plan: keeps the frames bound for the worker queue in `pkts` (in
    // order), forwards passthrough frames, frees dropped ones.
    uint16_t keep(Lane& l, rte_mbuf** pkts, uint16_t n) noexcept override {
        if (!emulated_) return n;
        uint16_t kept = 0, pass = 0;
        uint64_t dropped = 0;
        rte_mbuf* passing[PortSet::kBurst];  // n <= kBurst: the poll's burst size
        // The classifier reads every frame's headers, a miss each: keep several in flight.
        constexpr uint16_t kFramesAhead = 8;
        for (uint16_t i = 0; i < n && i < kFramesAhead; ++i)
            rte_prefetch0(rte_pktmbuf_mtod(pkts[i], const void*));
        BurstClassifier plans(context_.plans, context_.ports);
        for (uint16_t i = 0; i < n; ++i) {
            if (i + kFramesAhead < n)
                rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kFramesAhead], const void*));
            rte_mbuf* m = pkts[i];
            offload::Decision d;
            if (!plans.classify(m, d)) {
                pkts[kept++] = m;
            } else if (d.kind == offload::Decision::Kind::drop) {
                rte_pktmbuf_free(m);
                ++dropped;
            } else if (passes_through(d, workers_)) {
                passing[pass++] = m;  // out together below, in arrival order
            } else {
                pkts[kept++] = m;
            }
        }
        if (pass) {
            bump(l.counters.passthrough, pass);
            bump(l.counters.tx, pass);
            l.send(passing, pass);
        }
        if (dropped) bump(l.counters.dropped_rule, dropped);
        return kept;
    }

    void main_loop() override {
        while (!stopping()) std::this_thread::sleep_for(kIdleMainSleep);
    }

    bool emulated_ = false;  // some port applies its plan in software
};

}  // namespace

std::unique_ptr<Steering> direct_steering(const Steering::Context& context) {
    return std::make_unique<DirectSteering>(context);
}

}  // namespace insert::ports
