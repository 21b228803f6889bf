// The word-at-a-time text comparison (same_text.hpp) against its byte-at-a-time
// definition: every length around the 4-, 8- and 16-byte boundaries where it switches
// loads, every position of a differing byte. (json_plain: tests/dataplane/common.)
#include <gtest/gtest.h>

#include <string>

#include "correlator/input/same_text.hpp"

namespace insert::correlate {
namespace {

TEST(ShortText, same_text_agrees_with_byte_comparison_at_every_length_and_position) {
    for (std::size_t n = 0; n <= 24; ++n) {
        std::string a(n, 'x');
        for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + i % 26);
        EXPECT_TRUE(same_text(a, a));
        EXPECT_TRUE(same_text(a, std::string(a)));
        EXPECT_FALSE(same_text(a, a + "y")) << n;
        if (n > 0) {
            EXPECT_FALSE(same_text(a, a.substr(0, n - 1))) << n;
        }
        for (std::size_t i = 0; i < n; ++i) {
            std::string b = a;
            b[i] = static_cast<char>(b[i] ^ 0x01);
            EXPECT_FALSE(same_text(a, b)) << "length " << n << " position " << i;
            b[i] = static_cast<char>(a[i] ^ 0x80);
            EXPECT_FALSE(same_text(a, b)) << "length " << n << " position " << i;
        }
    }
    EXPECT_TRUE(same_text("post_send", "post_send"));
    EXPECT_FALSE(same_text("post_send", "post_recv"));
}

}  // namespace
}  // namespace insert::correlate
