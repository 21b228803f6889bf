#include "dataplane/pipeline/file_source.hpp"

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>

#include "dataplane/pipeline/backoff.hpp"
#include "dataplane/pipeline/borrowed_mbuf.hpp"
#include "dataplane/pipeline/dpdk_name.hpp"

namespace insert::pipeline {

namespace {

constexpr unsigned kPoolCache = 256;
constexpr uint16_t kMaxMbufFrame = std::numeric_limits<uint16_t>::max();

}  // namespace

std::unique_ptr<FileSource> FileSource::create(capture::CaptureFile file,
                                               const FileSourceConfig& config,
                                               const MbufTimestamp& timestamp, std::string& error) {
    if (config.workers == 0 || (config.ring_size & (config.ring_size - 1)) != 0) {
        error = "file source: need at least one worker and a power-of-two ring size";
        return nullptr;
    }
    std::unique_ptr<FileSource> src(new FileSource());
    src->file_ = std::move(file);
    src->timestamp_ = timestamp;
    src->policy_ = config.policy;

    // Every mbuf may sit in a ring, in the reader's staging or in a worker's burst, or in
    // a per-lcore mempool cache (up to 1.5x its size); beyond that the reader waits.
    const unsigned lcores = rte_lcore_count();
    const unsigned count =
        config.workers * (config.ring_size + 2 * kBurst) + lcores * (kPoolCache * 3 / 2) + 1024;
    const std::string pool_name = dpdk_name("src", src.get());
    src->pool_ = create_borrowing_pool(pool_name.c_str(), count, kPoolCache,
                                       static_cast<int>(rte_socket_id()));
    if (src->pool_ == nullptr) {
        error = std::string("cannot allocate the mbuf pool (") + std::to_string(count) +
                " mbufs): " + rte_strerror(rte_errno);
        return nullptr;
    }
    for (unsigned q = 0; q < config.workers; ++q) {
        const std::string name = dpdk_name("rx", src.get(), q);
        rte_ring* ring =
            rte_ring_create(name.c_str(), config.ring_size, static_cast<int>(rte_socket_id()),
                            RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (ring == nullptr) {
            error = "cannot allocate worker ring " + name + ": " + rte_strerror(rte_errno);
            return nullptr;
        }
        src->rings_.push_back(ring);
    }
    src->staging_.resize(config.workers);
    return src;
}

FileSource::~FileSource() {
    for (Staging& s : staging_) rte_pktmbuf_free_bulk(s.pkts, s.count);
    for (rte_ring* r : rings_) {
        rte_mbuf* m = nullptr;
        while (rte_ring_dequeue(r, reinterpret_cast<void**>(&m)) == 0) rte_pktmbuf_free(m);
        rte_ring_free(r);
    }
    rte_mempool_free(pool_);
}

bool FileSource::fill(rte_mbuf* m, const capture::Frame& frame) noexcept {
    std::size_t len = frame.data.size();
    if (len > kMaxMbufFrame) {
        len = kMaxMbufFrame;
        ++oversize_;
    }
    borrow(m, frame.data.data(), static_cast<uint16_t>(len));
    timestamp_.set(m, frame.ts_ns);
    return true;
}

uint16_t FileSource::rx_burst(unsigned q, rte_mbuf** pkts, uint16_t n) noexcept {
    const auto got = static_cast<uint16_t>(
        rte_ring_sc_dequeue_burst(rings_[q], reinterpret_cast<void**>(pkts), n, nullptr));
    // The reader wrote these mbufs on another core, and the worker reads their first line
    // (buffer address, length) and their second (the timestamp field), and writes both
    // when it frees them. Fetching them all now, for writing (a read would leave the
    // reader's copy shared, and the free would wait again), costs one wait per burst
    // instead of one miss after another.
    for (uint16_t i = 0; i < got; ++i) {
        const char* m = reinterpret_cast<const char*>(pkts[i]);
        __builtin_prefetch(m, /*rw=*/1);
        __builtin_prefetch(m + RTE_CACHE_LINE_SIZE, /*rw=*/1);
    }
    return got;
}

// Hands the staged burst of worker `q` to its ring; waits while the ring is full, which is
// the replay's back-pressure (nothing is dropped). False when stopped while waiting.
bool FileSource::flush(unsigned q) noexcept {
    Staging& s = staging_[q];
    unsigned sent = 0;
    Backoff backoff;
    while (sent < s.count) {
        sent += rte_ring_sp_enqueue_burst(rings_[q], reinterpret_cast<void**>(s.pkts + sent),
                                          s.count - sent, nullptr);
        if (sent < s.count) {
            if (stop_.load(std::memory_order_relaxed)) break;
            ++full_waits_;
            backoff.pause();
        }
    }
    if (sent < s.count) rte_pktmbuf_free_bulk(s.pkts + sent, s.count - sent);
    s.count = 0;
    return !stop_.load(std::memory_order_relaxed);
}

bool FileSource::run(std::string& error) {
    const unsigned workers = static_cast<unsigned>(rings_.size());
    rte_mbuf* fresh[kBurst];
    capture::Frame frame;
    uint64_t frames = 0;
    uint64_t end_ns = 0;
    bool more = true;
    while (more && !stop_.load(std::memory_order_relaxed)) {
        Backoff backoff;
        while (!take_bulk(pool_, fresh, kBurst)) {
            // Every mbuf is queued or being processed: let the workers catch up.
            if (stop_.load(std::memory_order_relaxed)) break;
            ++full_waits_;
            backoff.pause();
        }
        if (stop_.load(std::memory_order_relaxed)) break;
        unsigned used = 0;
        for (; used < kBurst; ++used) {
            if (!file_.next(frame)) {
                more = false;
                break;
            }
            rte_mbuf* m = fresh[used];
            fill(m, frame);
            end_ns = std::max(end_ns, frame.ts_ns);
            const unsigned q =
                workers == 1 ? 0 : shard_index(shard_hash(frame.data, policy_), workers);
            Staging& s = staging_[q];
            s.pkts[s.count++] = m;
            if (s.count == kBurst) flush(q);
        }
        if (used < kBurst) rte_pktmbuf_free_bulk(fresh + used, kBurst - used);
        frames += used;
        frames_.store(frames, std::memory_order_relaxed);
        position_.store(file_.position(), std::memory_order_relaxed);
    }
    for (unsigned q = 0; q < workers; ++q) flush(q);
    end_ns_.store(end_ns, std::memory_order_release);
    done_.store(true, std::memory_order_release);
    if (!file_.error().empty()) {
        error = file_.error();
        return false;
    }
    return true;
}

SourceProgress FileSource::progress() const noexcept {
    SourceProgress p;
    p.frames = frames_.load(std::memory_order_relaxed);
    const std::size_t size = file_.size_bytes();
    p.fraction = size == 0 ? 1.0
                           : static_cast<double>(position_.load(std::memory_order_relaxed)) /
                                 static_cast<double>(size);
    return p;
}

}  // namespace insert::pipeline
