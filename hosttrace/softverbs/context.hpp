// A device context: the verbs_context handed to the application, the tables of QPs and MRs
// that incoming packets are checked against, and the engine that moves the packets.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "hosttrace/softverbs/config.hpp"
#include "hosttrace/softverbs/objects.hpp"

namespace insert::softverbs {

struct Context {
    verbs_context vctx{};  // must be first; its last member is the ibv_context
    Device* device = nullptr;
    Config config;

    // Guards everything below and every QP/SRQ/MR's state. The engine holds it while it
    // processes a batch; verbs calls hold it briefly.
    std::mutex lock;
    std::array<Mr*, kMaxMrs> mrs{};
    uint32_t mr_next_slot = 1;  // slot 0 unused: key 0 is never valid
    uint8_t mr_tag = 0x5a;
    std::array<Qp*, kMaxQps> qps{};
    std::vector<Qp*> live_qps;
    uint32_t qpn_base = 0;  // QPNs are qpn_base + slot

    int async_read_fd = -1;  // context.async_fd; written when a QP enters the error state
    int async_write_fd = -1;
    std::unique_ptr<Engine> engine;
};

inline Context* to_ctx(ibv_context* c) {
    return reinterpret_cast<Context*>(reinterpret_cast<uint8_t*>(c) -
                                      offsetof(verbs_context, context));
}
inline ibv_context* to_ibv(Context* c) {
    return &c->vctx.context;
}

// Local memory check used for SGEs (lkey) and incoming RDMA (rkey): returns the MR that
// covers [va, va+len) with the access bits, or nullptr.
Mr* find_mr_lkey(Context& ctx, uint32_t lkey, uint64_t addr, uint64_t len);
Mr* find_mr_rkey(Context& ctx, Pd* pd, uint32_t rkey, uint64_t va, uint64_t len, unsigned access);
// Host pointer for remote-visible address `va` inside `mr`.
inline uint8_t* mr_ptr(const Mr* mr, uint64_t va) {
    return static_cast<uint8_t*>(mr->mr.addr) + (va - mr->iova);
}

Qp* find_qp(Context& ctx, uint32_t qpn);

}  // namespace insert::softverbs
