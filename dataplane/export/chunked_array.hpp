// An append-only array in fixed chunks: elements never move once added (pointers to them
// stay valid) and growing never copies. The exporter's per-endpoint tables grew by
// doubling vectors, which moved every element - and its heap parts - at each doubling.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace insert::exporter {

template <typename T, unsigned kChunkBits = 12>
class ChunkedArray {
  public:
    uint32_t size() const { return size_; }
    T& operator[](uint32_t i) const { return chunks_[i >> kChunkBits][i & kMask]; }
    // A value-initialised element at the end.
    T& emplace_back() {
        if ((size_ >> kChunkBits) == chunks_.size())
            chunks_.push_back(std::make_unique<T[]>(std::size_t{1} << kChunkBits));
        return (*this)[size_++];
    }
    void clear() {
        chunks_.clear();
        size_ = 0;
    }

  private:
    static constexpr uint32_t kMask = (1u << kChunkBits) - 1;
    std::vector<std::unique_ptr<T[]>> chunks_;
    uint32_t size_ = 0;
};

}  // namespace insert::exporter
