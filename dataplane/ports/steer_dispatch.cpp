// Dispatch steering: N workers and no hardware plan. The main lcore polls every queue,
// steers each frame by the emulated plan (or, with --offload off, by the replay's software
// RSS) into one SPSC ring per worker, and forwards passthrough frames itself. Ports with a
// single queue pair have one transmitting lcore: the workers then hand processed frames
// back to the main lcore through one return ring each.
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/pipeline/dpdk_name.hpp"
#include "dataplane/pipeline/shard.hpp"
#include "dataplane/ports/emulated_plan.hpp"

namespace insert::ports {

namespace {

class DispatchSteering final : public Steering {
  public:
    // Frames change lcore before a worker sees them: each carries its time in its mbuf.
    explicit DispatchSteering(const Context& context) : Steering(context, true) {
        for (const PortInfo& p : context.ports.ports())
            for (uint16_t q = 0; q < p.queues; ++q) main_lane().rx.push_back({p.id, q});
        staging_.resize(workers_);
        for (auto& s : staging_) s.reserve(PortSet::kBurst);
    }
    ~DispatchSteering() override {
        for (auto& s : staging_) rte_pktmbuf_free_bulk(s.data(), static_cast<unsigned>(s.size()));
        for (rte_ring* r : back_) free_ring(r);
        for (rte_ring* r : rings_) free_ring(r);
    }
    bool create_rings(std::string& error);
    SteerMode mode() const override { return SteerMode::dispatch; }

    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override {
        Lane& l = lane(q);
        const unsigned got =
            rte_ring_sc_dequeue_burst(rings_[q], reinterpret_cast<void**>(pkts), n, nullptr);
        if (got == 0)
            l.flush();
        else
            l.maybe_flush();
        return static_cast<uint16_t>(got);
    }
    void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    bool drained(unsigned q) const noexcept override {
        const bool d = done() && rte_ring_empty(rings_[q]);
        // Tells the main lcore this worker will release nothing more (return rings).
        if (d) lane(q).finished.store(true, std::memory_order_release);
        return d;
    }

  private:
    static void free_ring(rte_ring* r) {
        rte_mbuf* m;
        while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
        rte_ring_free(r);
    }
    void main_loop() override;
    unsigned worker_of(rte_mbuf* m, BurstClassifier& plans, uint64_t& pass,
                       uint64_t& dropped) noexcept;
    void deliver(unsigned q) noexcept;
    unsigned drain_back() noexcept;
    void drain_back_until_workers_finish() noexcept;

    static constexpr unsigned kNoWorker = UINT32_MAX;
    std::vector<rte_ring*> rings_;                 // per worker: main lcore -> worker
    std::vector<rte_ring*> back_;                  // single-queue inline ports: worker -> main
    std::vector<std::vector<rte_mbuf*>> staging_;  // per worker: this burst's frames
};

bool DispatchSteering::create_rings(std::string& error) {
    const auto make = [&](const char* kind, const char* what, unsigned q) -> rte_ring* {
        const std::string name = pipeline::dpdk_name(kind, this, q);
        rte_ring* r =
            rte_ring_create(name.c_str(), context_.config.worker_ring,
                            static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (r == nullptr)
            error = std::string("cannot allocate ") + what + " ring " + name + ": " +
                    rte_strerror(rte_errno);
        return r;
    };
    for (unsigned q = 0; q < workers_; ++q) {
        rings_.push_back(make("live", "worker", q));
        if (rings_.back() == nullptr) return false;
    }
    if (context_.ports.single_tx() && context_.config.mode == PortMode::inline_pair) {
        for (unsigned q = 0; q < workers_; ++q) {
            back_.push_back(make("back", "return", q));
            if (back_.back() == nullptr) return false;
        }
    }
    return true;
}

void DispatchSteering::release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    if (back_.empty()) {
        Steering::release(q, pkts, n);
        return;
    }
    Lane& l = lane(q);
    unsigned sent = 0;
    pipeline::Backoff full;
    while (sent < n) {
        sent += rte_ring_sp_enqueue_burst(back_[q], reinterpret_cast<void**>(pkts + sent), n - sent,
                                          nullptr);
        if (sent < n) {
            bump(l.counters.ring_waits, 1);
            full.pause();
        }
    }
}

void DispatchSteering::deliver(unsigned q) noexcept {
    Lane& l = main_lane();
    std::vector<rte_mbuf*>& s = staging_[q];
    unsigned sent = 0;
    pipeline::Backoff full;
    while (sent < s.size()) {
        sent += rte_ring_sp_enqueue_burst(rings_[q], reinterpret_cast<void**>(s.data() + sent),
                                          static_cast<unsigned>(s.size()) - sent, nullptr);
        if (sent < s.size()) {
            // Back-pressure: the worker is behind. Waiting stalls Rx (the port then counts
            // what it cannot take as imissed) but loses nothing already taken.
            bump(l.counters.ring_waits, 1);
            full.pause();
        }
    }
    s.clear();
}

unsigned DispatchSteering::drain_back() noexcept {
    Lane& l = main_lane();
    unsigned total = 0;
    for (unsigned q = 0; q < back_.size(); ++q) {
        rte_mbuf* out[PortSet::kBurst];
        const unsigned k = rte_ring_sc_dequeue_burst(back_[q], reinterpret_cast<void**>(out),
                                                     PortSet::kBurst, nullptr);
        for (unsigned j = 0; j < k; ++j) l.forward(out[j]);
        if (k) bump(lane(q).counters.tx, k);
        total += k;
    }
    return total;
}

// The worker a frame goes to, or kNoWorker when it was forwarded or dropped here.
unsigned DispatchSteering::worker_of(rte_mbuf* m, BurstClassifier& plans, uint64_t& pass,
                                     uint64_t& dropped) noexcept {
    offload::Decision d;
    if (!plans.classify(m, d)) {
        const std::span<const uint8_t> frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
        return pipeline::shard_index(pipeline::shard_hash(frame, context_.config.policy), workers_);
    }
    if (d.kind == offload::Decision::Kind::drop) {
        rte_pktmbuf_free(m);
        ++dropped;
        return kNoWorker;
    }
    if (passes_through(d, workers_)) {
        main_lane().forward(m);
        ++pass;
        return kNoWorker;
    }
    return d.kind == offload::Decision::Kind::queue ? d.queue : 0;
}

void DispatchSteering::main_loop() {
    Lane& l = main_lane();
    rte_mbuf* pkts[PortSet::kBurst];
    pipeline::Backoff idle(pipeline::kLivePollBackoff);  // as the workers
    while (!stopping()) {
        const unsigned returned = drain_back();
        const uint16_t got = poll(l, l.rx, pkts, PortSet::kBurst);
        if (got == 0) {
            if (returned == 0) {
                l.flush();
                idle.pause();
            } else {
                l.maybe_flush();
            }
            continue;
        }
        idle.reset();
        uint64_t pass = 0, dropped = 0;
        BurstClassifier plans(context_.plans, context_.ports);
        for (uint16_t i = 0; i < got; ++i) {
            const unsigned q = worker_of(pkts[i], plans, pass, dropped);
            if (q == kNoWorker) continue;
            staging_[q].push_back(pkts[i]);
            if (staging_[q].size() == PortSet::kBurst) deliver(q);
        }
        for (unsigned q = 0; q < workers_; ++q)
            if (!staging_[q].empty()) deliver(q);
        if (pass) {
            bump(l.counters.passthrough, pass);
            bump(l.counters.tx, pass);
        }
        if (dropped) bump(l.counters.dropped_rule, dropped);
        l.maybe_flush();
    }
    for (unsigned q = 0; q < workers_; ++q)
        if (!staging_[q].empty()) deliver(q);
    if (!back_.empty()) drain_back_until_workers_finish();
    l.flush();
}

// The workers still process what the rings hold: keep transmitting what they hand back
// until every one of them is done, so nothing taken in is lost at stop.
void DispatchSteering::drain_back_until_workers_finish() noexcept {
    finish(realtime_ns());
    pipeline::Backoff idle(pipeline::kLivePollBackoff);
    for (;;) {
        bool all = true;
        for (unsigned q = 0; q < workers_; ++q)
            all = all && lane(q).finished.load(std::memory_order_acquire);
        if (drain_back() == 0) {
            if (all) break;
            main_lane().flush();
            idle.pause();
        }
    }
}

}  // namespace

std::unique_ptr<Steering> dispatch_steering(const Steering::Context& context, std::string& error) {
    auto s = std::make_unique<DispatchSteering>(context);
    if (!s->create_rings(error)) return nullptr;
    return s;
}

}  // namespace insert::ports
