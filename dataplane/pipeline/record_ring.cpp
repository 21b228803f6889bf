#include "dataplane/pipeline/record_ring.hpp"

#include <rte_errno.h>
#include <rte_lcore.h>

#include "dataplane/pipeline/backoff.hpp"

namespace insert::pipeline {

std::unique_ptr<RecordRing> RecordRing::create(const std::string& name, unsigned size,
                                               FullPolicy policy, std::string& error) {
    std::unique_ptr<RecordRing> r(new RecordRing());
    r->policy_ = policy;
    r->ring_ = rte_ring_create_elem(name.c_str(), sizeof(state::Record), size, SOCKET_ID_ANY,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (r->ring_ == nullptr) {
        error = "cannot allocate record ring " + name + ": " + rte_strerror(rte_errno);
        return nullptr;
    }
    return r;
}

RecordRing::~RecordRing() {
    rte_ring_free(ring_);
}

bool RecordRing::push(const state::Record& record) {
    if (enqueue(record)) return true;
    full_events_.fetch_add(1, std::memory_order_relaxed);
    if (policy_ == FullPolicy::drop) return false;
    Backoff backoff;
    while (!closed_.load(std::memory_order_acquire)) {
        backoff.pause();
        if (enqueue(record)) return true;
    }
    return false;
}

}  // namespace insert::pipeline
