// The emulated offload plan applied to a burst (direct and dispatch steering): each frame's
// port plan (offload::SoftClassifier) decides whether it goes to a worker, passes through
// or is dropped.
#pragma once

#include <rte_mbuf.h>

#include "dataplane/ports/lane.hpp"
#include "dataplane/ports/port_set.hpp"
#include "dataplane/ports/steering.hpp"

namespace insert::ports {

// A burst comes from one or two ports: the plan is looked up when the port changes, and
// rule hits are counted per run of equal decisions, not per frame (both were dependent
// loads or a counter write per frame).
class BurstClassifier {
  public:
    BurstClassifier(const OffloadPlans& plans, const PortSet& ports)
        : plans_(plans), ports_(ports) {}
    ~BurstClassifier() { count_run(); }
    BurstClassifier(const BurstClassifier&) = delete;
    BurstClassifier& operator=(const BurstClassifier&) = delete;

    // False: the frame's port has no emulated plan (hardware or software steering).
    bool classify(const rte_mbuf* m, offload::Decision& d) noexcept {
        if (m->port != port_) {
            count_run();
            port_ = m->port;
            plan_ = plans_[ports_.index(port_)].get();
            run_rule_ = -1;
        }
        if (!plan_->emulated) return false;
        d = plan_->classifier.classify({rte_pktmbuf_mtod(m, const uint8_t*), m->data_len});
        if (d.rule != run_rule_) {
            count_run();
            run_rule_ = d.rule;
        }
        ++run_;
        return true;
    }

  private:
    void count_run() noexcept {
        if (run_rule_ >= 0) bump(plan_->hits[run_rule_], run_);
        run_ = 0;
    }
    const OffloadPlans& plans_;
    const PortSet& ports_;
    uint16_t port_ = UINT16_MAX;
    offload::OffloadState* plan_ = nullptr;
    int32_t run_rule_ = -1;
    uint64_t run_ = 0;
};

// Where a classified frame goes: a worker queue, through to the other port, or nowhere.
inline bool passes_through(const offload::Decision& d, unsigned workers) noexcept {
    return d.kind == offload::Decision::Kind::queue && d.queue >= workers;
}

}  // namespace insert::ports
