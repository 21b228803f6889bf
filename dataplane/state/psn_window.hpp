// Request-PSN classification of one endpoint (SPEC.md section 4): the newest request PSN
// and which PSNs in (max_psn - 1024, max_psn] were seen.
//
// Split in two because the bits are a cache line of their own (128 bytes, one line per
// packet) and at 100k+ endpoints every line is a DRAM miss: `PsnRun` (8 bytes, in the
// endpoint's hot line) holds max_psn and the start of the run of PSNs seen without a hole
// up to it; `PsnBits` (1024 bits) is exact only for the PSNs of the window older than
// the run. In-order requests extend the run and never read the bits; a gap writes the
// run into the bits (then starts a new run), and only a late or duplicate PSN older than
// the run reads them. The classification is the same as a plain 1024-bit window's
// (tests/dataplane/state/psn_window_test.cpp replays random sequences against one).
#pragma once

#include <cstddef>
#include <cstdint>

#include "dataplane/proto/psn.hpp"

namespace insert::state {

enum class PsnClass : uint8_t { fresh, late, dup };  // fresh = SPEC's `new`

struct PsnBits {
    static constexpr uint32_t kSize = 1024;
    uint64_t words[kSize / 64] = {};

    bool test(uint32_t psn) const { return (words[(psn % kSize) / 64] >> (psn % 64)) & 1; }
    void set(uint32_t psn) { words[(psn % kSize) / 64] |= uint64_t{1} << (psn % 64); }
    void clear_all() {
        for (auto& w : words) w = 0;
    }
    // Sets (or clears) the bits of `count` (<= kSize) PSNs from `psn` on, a word at a time.
    void fill(uint32_t psn, uint32_t count, bool value) {
        uint32_t pos = psn % kSize;
        while (count > 0) {
            const uint32_t bit = pos % 64;
            const uint32_t n = count < 64 - bit ? count : 64 - bit;
            const uint64_t mask = (n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1) << bit;
            uint64_t& w = words[pos / 64];
            w = value ? (w | mask) : (w & ~mask);
            count -= n;
            pos = (pos + n) % kSize;
        }
    }
    // The word that `psn` would touch (for prefetching).
    const void* word_of(uint32_t psn) const { return &words[(psn % kSize) / 64]; }
};

class PsnRun {
  public:
    static constexpr uint32_t kSize = PsnBits::kSize;

    bool empty() const { return run_start_ == kEmpty; }
    uint32_t max_psn() const { return max_psn_; }
    // Whether observe(psn) will read or write the bits (the engine prefetches them then).
    bool needs_bits(uint32_t psn) const {
        if (empty()) return true;
        if (proto::psn_newer(psn, max_psn_)) return proto::psn_sub(psn, max_psn_) != 1;
        return !in_run(psn) && proto::psn_sub(max_psn_, psn) < kSize;
    }

    // Classifies `psn` and records it as seen.
    PsnClass observe(uint32_t psn, PsnBits& bits) {
        if (empty()) {
            bits.clear_all();  // nothing older than the run was seen
            max_psn_ = run_start_ = psn;
            return PsnClass::fresh;
        }
        if (proto::psn_newer(psn, max_psn_)) {
            const uint32_t step = proto::psn_sub(psn, max_psn_);
            if (step == 1) {
                // The run grows; past the window's size its oldest PSNs leave the window.
                max_psn_ = psn;
                if (proto::psn_sub(max_psn_, run_start_) >= kSize)
                    run_start_ = proto::psn_sub(max_psn_, kSize - 1);
                return PsnClass::fresh;
            }
            if (step >= kSize) {
                bits.clear_all();
            } else {
                // A hole: the bits must now describe (psn - 1024, psn). The run's PSNs still
                // in it were seen, the ones between max_psn and psn were not; older bits
                // were exact already.
                const uint32_t oldest = proto::psn_sub(psn, kSize - 1);
                const uint32_t from =
                    proto::psn_sub(max_psn_, run_start_) < proto::psn_sub(max_psn_, oldest)
                        ? run_start_
                        : oldest;
                bits.fill(from, proto::psn_sub(max_psn_, from) + 1, true);
                bits.fill(proto::psn_add(max_psn_, 1), step - 1, false);
            }
            max_psn_ = run_start_ = psn;
            return PsnClass::fresh;
        }
        if (proto::psn_sub(max_psn_, psn) >= kSize || in_run(psn)) return PsnClass::dup;
        if (bits.test(psn)) return PsnClass::dup;
        bits.set(psn);
        return PsnClass::late;
    }

    // Whether `psn` was observed, as far as the window remembers: PSNs older than the
    // window's 1024 read as seen.
    bool seen(uint32_t psn, const PsnBits& bits) const {
        if (empty() || proto::psn_newer(psn, max_psn_)) return false;
        if (proto::psn_sub(max_psn_, psn) >= kSize || in_run(psn)) return true;
        return bits.test(psn);
    }

  private:
    static constexpr uint32_t kEmpty = UINT32_MAX;  // PSNs have 24 bits
    // psn (not newer than max_psn) lies in [run_start, max_psn].
    bool in_run(uint32_t psn) const {
        return proto::psn_sub(max_psn_, psn) <= proto::psn_sub(max_psn_, run_start_);
    }

    uint32_t max_psn_ = 0;
    uint32_t run_start_ = kEmpty;  // [run_start, max_psn] were all seen (at most kSize)
};
static_assert(sizeof(PsnRun) == 8);

// Both halves together (tests, and anything without the engine's layout constraints).
class PsnWindow {
  public:
    static constexpr uint32_t kSize = PsnBits::kSize;
    bool empty() const { return run_.empty(); }
    uint32_t max_psn() const { return run_.max_psn(); }
    PsnClass observe(uint32_t psn) { return run_.observe(psn, bits_); }
    bool seen(uint32_t psn) const { return run_.seen(psn, bits_); }

  private:
    PsnRun run_;
    PsnBits bits_;
};

}  // namespace insert::state
