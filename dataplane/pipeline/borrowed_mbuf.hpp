// Mbufs that describe frame bytes they do not own - a mapped capture file, an in-memory
// workload - for sources whose consumers only read packet data and then free the mbuf.
//
// DPDK's general answer is an external buffer (rte_pktmbuf_attach_extbuf), but freeing
// such an mbuf detaches it: a reference count in its shared-info block, a callback, and
// its own IOVA read back from the mempool object header - three more cache lines per
// packet, which the worker had to fetch from the reader's core, about a tenth of a replay
// worker's time. Here the pool gives its mbufs no data room at all, and each mbuf is
// simply pointed at its frame: it stays a direct mbuf, so freeing it only returns it to
// the pool, and its next use points it elsewhere. This holds only while nothing writes,
// chains, clones or transmits these mbufs and the bytes outlive them - true of the replay
// and benchmark workers, which parse a frame and free it.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

namespace insert::pipeline {

// A pool of data-less mbufs for borrow(); null and rte_errno set on failure.
inline rte_mempool* create_borrowing_pool(const char* name, unsigned count, unsigned cache,
                                          int socket) {
    return rte_pktmbuf_pool_create(name, count, cache, /*priv_size=*/0, /*data_room=*/0, socket);
}

// Takes n mbufs of such a pool on the lcore that fills them, as a NIC PMD refills its
// receive ring: a plain mempool get, without rte_pktmbuf_alloc_bulk's reset of every field
// (~15 stores a packet). The fields borrow() does not set keep the values the pool's
// initialisation gave them, because nothing else ever writes them: every mbuf of such a
// pool is direct, single-segment, with a reference count of 1 (give_back() keeps it so).
inline bool get_bulk(rte_mempool* pool, rte_mbuf** mbufs, unsigned n) {
    return rte_mempool_get_bulk(pool, reinterpret_cast<void**>(mbufs), n) == 0;
}

// Takes n mbufs from such a pool, reset, or returns false when it has fewer. For a
// producer whose mbufs come back freed by other cores (the replay reader's, freed by the
// workers): their first two lines are fetched for writing all at once before any is
// written, where rte_pktmbuf_alloc_bulk resets one after another, each a miss on a line
// another core holds (two thirds of the reader's own time).
inline bool take_bulk(rte_mempool* pool, rte_mbuf** mbufs, unsigned n) {
    if (!get_bulk(pool, mbufs, n)) return false;
    for (unsigned i = 0; i < n; ++i) {
        const char* m = reinterpret_cast<const char*>(mbufs[i]);
        __builtin_prefetch(m, /*rw=*/1);
        __builtin_prefetch(m + RTE_CACHE_LINE_SIZE, /*rw=*/1);
    }
    for (unsigned i = 0; i < n; ++i) rte_pktmbuf_reset(mbufs[i]);
    return true;
}

// Returns mbufs of such a pool after use. They are as borrow() left them - direct, one
// segment, reference count 1, held by no one else - the same guarantee a NIC driver's
// fast-free transmit offload (RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) takes from its user, so
// they go back in one bulk put, without rte_pktmbuf_free_bulk's per-mbuf reference count,
// segment and pool checks (~40 instructions a packet, a twentieth of a worker's).
inline void give_back(rte_mempool* pool, rte_mbuf** mbufs, unsigned n) {
    rte_mempool_put_bulk(pool, reinterpret_cast<void* const*>(mbufs), n);
}

// Points a freshly allocated mbuf of such a pool at `len` bytes at `data`.
inline void borrow(rte_mbuf* m, const uint8_t* data, uint16_t len) {
    m->buf_addr = const_cast<uint8_t*>(data);  // read-only: nothing writes packet data
    rte_mbuf_iova_set(m, RTE_BAD_IOVA);        // never handed to a device
    m->buf_len = len;
    m->data_off = 0;
    m->data_len = len;
    m->pkt_len = len;
}

}  // namespace insert::pipeline
