// Replay source: a memory-mapped capture (capture::CaptureFile) turned into mbufs on the
// main lcore and sharded in software to one SPSC ring per worker - the emulated NIC with
// symmetric RSS. The pcap PMD tops out at 2.5 Mpps here; this reader does no copy and no
// per-packet library call: each mbuf is a header from a data-less pool pointed at the
// frame bytes in place (borrowed_mbuf.hpp). The mapping outlives every mbuf (the source
// is destroyed after the workers).
#pragma once

#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/pipeline/borrowed_mbuf.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"
#include "dataplane/pipeline/packet_source.hpp"
#include "dataplane/pipeline/shard.hpp"

namespace insert::pipeline {

struct FileSourceConfig {
    unsigned workers = 1;
    ShardPolicy policy = ShardPolicy::ip_pair;
    unsigned ring_size = 4096;  // per worker; a power of two
};

class FileSource final : public PacketSource {
  public:
    // Takes an opened capture. nullptr and `error` if DPDK memory cannot be had.
    static std::unique_ptr<FileSource> create(capture::CaptureFile file,
                                              const FileSourceConfig& config,
                                              const MbufTimestamp& timestamp, std::string& error);
    ~FileSource() override;

    unsigned queues() const override { return static_cast<unsigned>(rings_.size()); }
    uint16_t rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept override;
    // The worker's mbufs, all this source's own borrowed ones, straight back to its pool.
    void release(unsigned, rte_mbuf** pkts, uint16_t n) noexcept override {
        give_back(pool_, pkts, n);
    }
    bool drained(unsigned q) const noexcept override {
        return done_.load(std::memory_order_acquire) && rte_ring_empty(rings_[q]);
    }
    bool run(std::string& error) override;
    void stop() noexcept override { stop_.store(true, std::memory_order_relaxed); }
    uint64_t end_ns() const noexcept override { return end_ns_.load(std::memory_order_acquire); }
    SourceProgress progress() const noexcept override;

    // Frames longer than an mbuf can describe (64 KiB): handed on cut to 65535 bytes.
    uint64_t oversize_frames() const { return oversize_; }
    // Times the reader waited for a worker's ring or for free mbufs (back-pressure).
    uint64_t full_waits() const { return full_waits_; }
    // After run() failed: the capture ended inside a record (cut short), not corrupt.
    bool truncated() const { return file_.truncated(); }

  private:
    FileSource() = default;
    bool fill(rte_mbuf* m, const capture::Frame& frame) noexcept;
    bool flush(unsigned q) noexcept;

    static constexpr unsigned kBurst = 32;
    capture::CaptureFile file_;
    MbufTimestamp timestamp_;
    ShardPolicy policy_ = ShardPolicy::ip_pair;
    rte_mempool* pool_ = nullptr;
    std::vector<rte_ring*> rings_;
    struct Staging {
        rte_mbuf* pkts[kBurst];
        unsigned count = 0;
    };
    std::vector<Staging> staging_;
    std::atomic<bool> done_{false};
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> frames_{0};
    std::atomic<uint64_t> position_{0};
    std::atomic<uint64_t> end_ns_{0};
    uint64_t oversize_ = 0;
    uint64_t full_waits_ = 0;
};

}  // namespace insert::pipeline
