#include "dataplane/state/psn_window.hpp"

#include <gtest/gtest.h>

#include <random>

namespace insert::state {
namespace {

TEST(PsnWindow, first_packet_is_new_and_sets_max) {
    PsnWindow w;
    EXPECT_EQ(w.observe(42), PsnClass::fresh);
    EXPECT_EQ(w.max_psn(), 42u);
}

TEST(PsnWindow, newer_across_the_wrap) {
    PsnWindow w;
    w.observe(0xFFFFFF);
    EXPECT_EQ(w.observe(0), PsnClass::fresh);
    EXPECT_EQ(w.observe(0xFFFFFF), PsnClass::dup);
    EXPECT_EQ(w.observe(0xFFFFFE), PsnClass::late);
}

TEST(PsnWindow, half_space_away_is_older_not_newer) {
    PsnWindow w;
    w.observe(0);
    // (0 - 2^23) mod 2^24 = 2^23 is not in [1, 2^23): older, and far outside the window.
    EXPECT_EQ(w.observe(1u << 23), PsnClass::dup);
    EXPECT_EQ(w.observe((1u << 23) - 1), PsnClass::fresh);
}

// The window as first written: one bit per PSN of (max_psn - 1024, max_psn], cleared as
// max_psn advances. PsnWindow (a run plus bits) must classify exactly as this does.
class ReferenceWindow {
  public:
    static constexpr uint32_t kSize = 1024;
    PsnClass observe(uint32_t psn) {
        if (!started_) {
            started_ = true;
            max_psn_ = psn;
            for (auto& w : bits_) w = 0;
            set(psn);
            return PsnClass::fresh;
        }
        if (proto::psn_newer(psn, max_psn_)) {
            const uint32_t step = proto::psn_sub(psn, max_psn_);
            if (step >= kSize) {
                for (auto& w : bits_) w = 0;
            } else {
                for (uint32_t i = 1; i <= step; ++i) clear(proto::psn_add(max_psn_, i));
            }
            max_psn_ = psn;
            set(psn);
            return PsnClass::fresh;
        }
        if (proto::psn_sub(max_psn_, psn) >= kSize || test(psn)) return PsnClass::dup;
        set(psn);
        return PsnClass::late;
    }
    uint32_t max_psn() const { return max_psn_; }
    bool seen(uint32_t psn) const {
        if (!started_ || proto::psn_newer(psn, max_psn_)) return false;
        return proto::psn_sub(max_psn_, psn) >= kSize || test(psn);
    }

  private:
    void set(uint32_t psn) { bits_[(psn % kSize) / 64] |= uint64_t{1} << (psn % 64); }
    void clear(uint32_t psn) { bits_[(psn % kSize) / 64] &= ~(uint64_t{1} << (psn % 64)); }
    bool test(uint32_t psn) const { return (bits_[(psn % kSize) / 64] >> (psn % 64)) & 1; }
    uint32_t max_psn_ = 0;
    bool started_ = false;
    uint64_t bits_[kSize / 64] = {};
};

// Random request streams: in order, holes of every size, jumps past the window, late and
// duplicate PSNs inside it, at its edge and beyond, across the 24-bit wrap.
TEST(PsnWindow, classifies_exactly_as_a_plain_bit_window) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
        std::mt19937_64 rng(seed);
        PsnWindow w;
        ReferenceWindow ref;
        uint32_t psn = seed % 4 == 0 ? 0xFFFFFF - static_cast<uint32_t>(rng() % 3000)
                                     : static_cast<uint32_t>(rng() & proto::kPsnMask);
        for (int i = 0; i < 50000; ++i) {
            const unsigned kind = static_cast<unsigned>(rng() % 100);
            const uint32_t max = ref.max_psn();
            if (i == 0 || kind < 55)
                psn = proto::psn_add(i == 0 ? psn : max, 1);
            else if (kind < 65)
                psn = proto::psn_add(max, 2 + static_cast<uint32_t>(rng() % 64));
            else if (kind < 68)
                psn = proto::psn_add(max, 64 + static_cast<uint32_t>(rng() % 1100));
            else if (kind < 69)
                psn = proto::psn_add(max, static_cast<uint32_t>(rng() % (1u << 23)));
            else if (kind < 90)
                psn = proto::psn_sub(max, static_cast<uint32_t>(rng() % 40));
            else if (kind < 98)
                psn = proto::psn_sub(max, 1000 + static_cast<uint32_t>(rng() % 60));
            else
                psn = static_cast<uint32_t>(rng() & proto::kPsnMask);
            ASSERT_EQ(w.observe(psn), ref.observe(psn)) << "seed " << seed << " step " << i;
            ASSERT_EQ(w.max_psn(), ref.max_psn());
            // What the engine asks of a hole in a message (engine_messages.cpp past_hole).
            const uint32_t probe = proto::psn_sub(ref.max_psn(), 1100 - rng() % 1104);
            ASSERT_EQ(w.seen(probe), ref.seen(probe)) << "seed " << seed << " step " << i;
        }
    }
}

TEST(PsnWindow, a_run_longer_than_the_window_forgets_its_oldest_psns) {
    PsnWindow w;
    const uint32_t max = 3099;
    for (uint32_t p = 100; p <= max; ++p) ASSERT_EQ(w.observe(p), PsnClass::fresh);
    EXPECT_EQ(w.observe(max - 1024), PsnClass::dup);  // just outside the window
    EXPECT_EQ(w.observe(max - 1023), PsnClass::dup);  // inside, seen
    EXPECT_EQ(w.observe(max + 5), PsnClass::fresh);   // a hole of 4
    EXPECT_EQ(w.observe(max + 2), PsnClass::late);
    EXPECT_EQ(w.observe(max + 2), PsnClass::dup);
    EXPECT_EQ(w.observe(max - 1), PsnClass::dup);         // the old run, now in the bits
    EXPECT_EQ(w.observe(max + 5 - 1023), PsnClass::dup);  // the oldest PSN still inside
}

TEST(PsnWindow, a_jump_clears_stale_bits) {
    PsnWindow w;
    w.observe(5);
    w.observe(5 + 1024);  // 5 now lies at the window's edge: older than the window
    EXPECT_EQ(w.observe(5), PsnClass::dup);
    EXPECT_EQ(w.observe(6), PsnClass::late);  // slot reused for 1030 was cleared
}

}  // namespace
}  // namespace insert::state
