// Packet timestamps travel in the mbuf's standard Rx timestamp dynamic field, the same
// field NIC PMDs fill with hardware timestamps (DESIGN.md "Time"). Replay stores the
// capture timestamp there, so workers read time the same way for every source.
#pragma once

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstdint>
#include <string>

namespace insert::pipeline {

struct MbufTimestamp {
    int offset = -1;
    uint64_t rx_flag = 0;

    // Registers (or looks up) the field after rte_eal_init(); false and `error` otherwise.
    bool register_field(std::string& error);

    void set(rte_mbuf* m, uint64_t ns) const noexcept {
        *RTE_MBUF_DYNFIELD(m, offset, uint64_t*) = ns;
        m->ol_flags |= rx_flag;
    }
    uint64_t get(const rte_mbuf* m) const noexcept {
        return *RTE_MBUF_DYNFIELD(m, offset, const uint64_t*);
    }
};

}  // namespace insert::pipeline
