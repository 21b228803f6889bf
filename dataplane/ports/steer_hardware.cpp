// Hardware steering: the NIC's rte_flow plan puts RoCE on worker queues 0..N-1 (symmetric
// RSS) and everything else on queue N, which the main lcore forwards.
#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/ports/polled_steering.hpp"

namespace insert::ports {

namespace {

class HardwareSteering final : public PolledSteering {
  public:
    explicit HardwareSteering(const Context& context) : PolledSteering(context, false) {
        for (unsigned q = 0; q < workers_; ++q)
            for (const PortInfo& p : context.ports.ports())
                lane(q).rx.push_back({p.id, static_cast<uint16_t>(q)});
        for (const PortInfo& p : context.ports.ports())
            passthrough_.push_back({p.id, static_cast<uint16_t>(workers_)});
    }
    SteerMode mode() const override { return SteerMode::hardware; }

  private:
    uint16_t keep(Lane&, rte_mbuf**, uint16_t n) noexcept override { return n; }

    void main_loop() override {
        Lane& l = main_lane();
        rte_mbuf* pkts[PortSet::kBurst];
        pipeline::Backoff idle(pipeline::kLivePollBackoff);  // as the workers
        while (!stopping()) {
            const uint16_t got = poll(l, passthrough_, pkts, PortSet::kBurst);
            if (got == 0) {
                l.flush();
                idle.pause();
                continue;
            }
            idle.reset();
            for (uint16_t i = 0; i < got; ++i) l.forward(pkts[i]);
            bump(l.counters.passthrough, got);
            bump(l.counters.tx, got);
            l.maybe_flush();
        }
        l.flush();
    }

    std::vector<RxQueue> passthrough_;  // queue N of every port
};

}  // namespace

std::unique_ptr<Steering> hardware_steering(const Steering::Context& context) {
    return std::make_unique<HardwareSteering>(context);
}

}  // namespace insert::ports
