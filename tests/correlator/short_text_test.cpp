// The word-at-a-time text helpers against their byte-at-a-time definitions: every length
// around the 4-, 8- and 16-byte boundaries where they switch loads, every position of a
// differing or special byte.
#include <gtest/gtest.h>

#include <string>

#include "correlator/input/same_text.hpp"
#include "dataplane/common/swar.hpp"

namespace insert::correlate {
namespace {

bool plain_by_bytes(std::string_view text) {
    for (const char c : text)
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
    return true;
}

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

TEST(ShortText, json_plain_finds_a_special_byte_wherever_it_stands) {
    const char specials[] = {'"', '\\', '\x00', '\x01', '\x1f'};
    const char harmless[] = {' ', '!', '#', '[', ']', '\x7f', '\x80', '\xa0', '\xdc', '\xff'};
    for (std::size_t n = 0; n <= 40; ++n) {
        const std::string base(n, 'q');
        EXPECT_TRUE(swar::json_plain(base)) << n;
        for (std::size_t i = 0; i < n; ++i) {
            for (const char c : specials) {
                std::string text = base;
                text[i] = c;
                EXPECT_FALSE(swar::json_plain(text))
                    << "length " << n << " position " << i << " byte " << int(c);
            }
            for (const char c : harmless) {
                std::string text = base;
                text[i] = c;
                EXPECT_EQ(swar::json_plain(text), plain_by_bytes(text))
                    << "length " << n << " position " << i << " byte " << int(c);
            }
        }
    }
}

}  // namespace
}  // namespace insert::correlate
