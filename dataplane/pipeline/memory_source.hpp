// In-memory source: frames already in RAM, pre-sharded per worker queue with the same
// software RSS as the file source. Each worker's rx_burst() does what a NIC PMD's receive
// does on its own lcore - take mbufs from a pool and point them at the frame bytes - so a
// benchmark (insert-pipeline-bench, later `insert-dp bench`) measures workers exactly as
// they run on a port, without file I/O and without a reader core.
#pragma once

#include <rte_mempool.h>

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/pipeline/shard.hpp"

namespace insert::pipeline {

struct MemoryFrame {
    const uint8_t* data = nullptr;
    uint32_t len = 0;
    uint64_t ts_ns = 0;
};

class MemorySource final : public PacketSource {
  public:
    // The bytes behind `frames` must outlive the source and every mbuf it hands out.
    static std::unique_ptr<MemorySource> create(std::span<const MemoryFrame> frames,
                                                unsigned workers, ShardPolicy policy,
                                                const MbufTimestamp& timestamp, std::string& error);
    ~MemorySource() override;

    unsigned queues() const override { return static_cast<unsigned>(queues_.size()); }
    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    // The worker's mbufs, all this source's own borrowed ones, straight back to its pool.
    void release(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    bool drained(unsigned q) const noexcept override {
        return queues_[q]->pos.load(std::memory_order_relaxed) >= queues_[q]->frames.size() ||
               stop_.load(std::memory_order_relaxed);
    }
    bool run(std::string&) override { return true; }  // the "hardware" fills the queues
    void stop() noexcept override { stop_.store(true, std::memory_order_relaxed); }
    uint64_t end_ns() const noexcept override { return end_ns_; }
    SourceProgress progress() const noexcept override;

    std::size_t queue_frames(unsigned q) const { return queues_[q]->frames.size(); }

  private:
    MemorySource() = default;
    struct alignas(64) Queue {
        std::vector<MemoryFrame> frames;
        std::atomic<std::size_t> pos{0};  // written by its worker only
    };
    std::vector<std::unique_ptr<Queue>> queues_;
    MbufTimestamp timestamp_;
    rte_mempool* pool_ = nullptr;
    std::size_t total_ = 0;
    uint64_t end_ns_ = 0;
    std::atomic<bool> stop_{false};
};

}  // namespace insert::pipeline
