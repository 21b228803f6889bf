// Request-PSN classification of one endpoint (SPEC.md section 4): the newest request PSN
// and a 1024-bit record of which PSNs in (max_psn - 1024, max_psn] were seen.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/proto/psn.hpp"

namespace insert::state {

enum class PsnClass : uint8_t { fresh, late, dup };  // fresh = SPEC's `new`

class PsnWindow {
  public:
    static constexpr uint32_t kSize = 1024;

    bool empty() const { return !started_; }
    uint32_t max_psn() const { return max_psn_; }

    // Classifies `psn` and records it as seen.
    PsnClass observe(uint32_t psn) {
        if (!started_) {
            started_ = true;
            max_psn_ = psn;
            clear_all();
            set(psn);
            return PsnClass::fresh;
        }
        if (proto::psn_newer(psn, max_psn_)) {
            advance_to(psn);
            set(psn);
            return PsnClass::fresh;
        }
        if (proto::psn_sub(max_psn_, psn) >= kSize || test(psn)) return PsnClass::dup;
        set(psn);
        return PsnClass::late;
    }

  private:
    void advance_to(uint32_t psn) {
        const uint32_t step = proto::psn_sub(psn, max_psn_);
        if (step >= kSize) {
            clear_all();
        } else {
            for (uint32_t i = 1; i <= step; ++i) clear(proto::psn_add(max_psn_, i));
        }
        max_psn_ = psn;
    }
    void set(uint32_t psn) { bits_[(psn % kSize) / 64] |= uint64_t{1} << (psn % 64); }
    void clear(uint32_t psn) { bits_[(psn % kSize) / 64] &= ~(uint64_t{1} << (psn % 64)); }
    bool test(uint32_t psn) const { return (bits_[(psn % kSize) / 64] >> (psn % 64)) & 1; }
    void clear_all() {
        for (auto& w : bits_) w = 0;
    }

    // Header first: the engine places it at the end of a cache line so that the bits
    // fill whole lines and a packet reads the header's line plus one line of bits.
    uint32_t max_psn_ = 0;
    bool started_ = false;
    uint64_t bits_[kSize / 64] = {};

  public:
    static constexpr std::size_t kBitsOffset = 8;  // checked below
    // The address of the bits word that `psn` would touch (for prefetching).
    const void* word_of(uint32_t psn) const { return &bits_[(psn % kSize) / 64]; }
};
static_assert(sizeof(PsnWindow) == PsnWindow::kBitsOffset + PsnWindow::kSize / 8);

}  // namespace insert::state
