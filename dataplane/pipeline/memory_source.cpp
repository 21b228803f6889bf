#include "dataplane/pipeline/memory_source.hpp"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>

#include "dataplane/pipeline/borrowed_mbuf.hpp"
#include "dataplane/pipeline/dpdk_name.hpp"

namespace insert::pipeline {

namespace {

constexpr unsigned kPoolCache = 256;
constexpr unsigned kMaxBurst = 64;

}  // namespace

std::unique_ptr<MemorySource> MemorySource::create(std::span<const MemoryFrame> frames,
                                                   unsigned workers, ShardPolicy policy,
                                                   const MbufTimestamp& timestamp,
                                                   std::string& error) {
    if (workers == 0) {
        error = "memory source: need at least one worker";
        return nullptr;
    }
    std::unique_ptr<MemorySource> src(new MemorySource());
    src->timestamp_ = timestamp;
    src->total_ = frames.size();
    for (unsigned q = 0; q < workers; ++q) src->queues_.push_back(std::make_unique<Queue>());
    for (const MemoryFrame& f : frames) {
        const unsigned q =
            workers == 1 ? 0 : shard_index(shard_hash({f.data, f.len}, policy), workers);
        src->queues_[q]->frames.push_back(f);
        src->end_ns_ = std::max(src->end_ns_, f.ts_ns);
    }
    const unsigned count = workers * (kMaxBurst + kPoolCache * 2) + 2048;
    const std::string name = dpdk_name("mem", src.get());
    src->pool_ =
        create_borrowing_pool(name.c_str(), count, kPoolCache, static_cast<int>(rte_socket_id()));
    if (src->pool_ == nullptr) {
        error = std::string("cannot allocate the mbuf pool: ") + rte_strerror(rte_errno);
        return nullptr;
    }
    return src;
}

MemorySource::~MemorySource() {
    rte_mempool_free(pool_);
}

uint16_t MemorySource::rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    Queue& queue = *queues_[q];
    const std::size_t pos = queue.pos.load(std::memory_order_relaxed);
    const std::size_t left = queue.frames.size() - std::min(pos, queue.frames.size());
    const unsigned take = static_cast<unsigned>(std::min<std::size_t>({left, n, kMaxBurst}));
    if (take == 0 || !get_bulk(pool_, pkts, take)) return 0;
    for (unsigned i = 0; i < take; ++i) {
        const MemoryFrame& f = queue.frames[pos + i];
        rte_mbuf* m = pkts[i];
        borrow(m, f.data, static_cast<uint16_t>(std::min<uint32_t>(f.len, UINT16_MAX)));
        timestamp_.set(m, f.ts_ns);
    }
    // A NIC's descriptor ring sits in the cache; this array is in DRAM. The descriptors two
    // bursts ahead are fetched now: ~7 ns a frame stalled on them otherwise
    // (docs/performance.md, "Prefetch stages"). (Fetching the next burst's frame headers as
    // well, as a NIC with DDIO leaves them in the LLC, measured no different: the frames of a
    // queue are consecutive and the hardware prefetcher follows them.)
    const std::size_t next = pos + take;
    const std::size_t size = queue.frames.size();
    const std::size_t far = std::min(next + take, size);
    const auto* descriptors = reinterpret_cast<const char*>(queue.frames.data() + far);
    const std::size_t far_bytes = (std::min(far + take, size) - far) * sizeof(MemoryFrame);
    for (std::size_t off = 0; off < far_bytes; off += RTE_CACHE_LINE_SIZE)
        rte_prefetch0(descriptors + off);
    queue.pos.store(next, std::memory_order_relaxed);
    return static_cast<uint16_t>(take);
}

void MemorySource::release(unsigned, rte_mbuf** pkts, uint16_t n) noexcept {
    give_back(pool_, pkts, n);
}

SourceProgress MemorySource::progress() const noexcept {
    SourceProgress p;
    for (const auto& q : queues_) p.frames += q->pos.load(std::memory_order_relaxed);
    p.fraction = total_ ? static_cast<double>(p.frames) / static_cast<double>(total_) : 1.0;
    return p;
}

}  // namespace insert::pipeline
