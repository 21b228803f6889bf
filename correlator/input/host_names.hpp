// Host names interned to small ids, shared by the parsing threads and read by every stage
// that names a host (records, alerts, congestion, reports).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace insert::correlate {

// Host names -> small ids, shared by the parsing threads. Ids follow first appearance,
// which depends on thread timing: everything that orders by host compares names.
// Interning takes a lock; reading a name does not (every e2e record reads two, and the
// live correlator reads while its input threads intern): names are published in chunks
// that never move, each before any id in it is handed out.
class HostNames {
  public:
    HostNames() = default;
    HostNames(const HostNames&) = delete;
    HostNames& operator=(const HostNames&) = delete;
    ~HostNames();

    uint32_t intern(std::string_view name);
    std::string name(uint32_t id) const { return std::string(view(id)); }
    // Valid while this lives; empty for an id not handed out.
    std::string_view view(uint32_t id) const;
    std::size_t size() const { return size_.load(std::memory_order_acquire); }

  private:
    // Chunk k holds the ids [64 (2^k - 1), 64 (2^(k+1) - 1)): 32 chunks cover every id.
    static constexpr unsigned kChunks = 32;
    static constexpr uint32_t kFirstChunk = 64;
    static unsigned chunk_of(uint32_t id);
    static uint64_t chunk_base(unsigned chunk) {
        return kFirstChunk * ((uint64_t{1} << chunk) - 1);
    }

    std::mutex mutex_;                               // interning
    std::unordered_map<std::string, uint32_t> ids_;  // under mutex_
    std::deque<std::string> names_;  // under mutex_; a deque: interning never moves a name
    std::array<std::atomic<std::string_view*>, kChunks> chunks_{};
    std::atomic<uint32_t> size_{0};
};

}  // namespace insert::correlate
