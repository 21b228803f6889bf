#include "dataplane/state/psn_window.hpp"

#include <gtest/gtest.h>

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

TEST(PsnWindow, a_jump_clears_stale_bits) {
    PsnWindow w;
    w.observe(5);
    w.observe(5 + 1024);  // 5 now lies at the window's edge: older than the window
    EXPECT_EQ(w.observe(5), PsnClass::dup);
    EXPECT_EQ(w.observe(6), PsnClass::late);  // slot reused for 1030 was cleared
}

}  // namespace
}  // namespace insert::state
