// The word-at-a-time JSON byte test (swar.hpp) against its byte-at-a-time definition:
// every length around the 4-, 8- and 16-byte boundaries where it switches loads, every
// position of a special byte.
#include "dataplane/common/swar.hpp"

#include <gtest/gtest.h>

#include <string>

namespace insert::swar {
namespace {

bool plain_by_bytes(std::string_view text) {
    for (const char c : text)
        if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
    return true;
}

TEST(ShortText, json_plain_finds_a_special_byte_wherever_it_stands) {
    const char specials[] = {'"', '\\', '\x00', '\x01', '\x1f'};
    const char harmless[] = {' ', '!', '#', '[', ']', '\x7f', '\x80', '\xa0', '\xdc', '\xff'};
    for (std::size_t n = 0; n <= 40; ++n) {
        const std::string base(n, 'q');
        EXPECT_TRUE(json_plain(base)) << n;
        for (std::size_t i = 0; i < n; ++i) {
            for (const char c : specials) {
                std::string text = base;
                text[i] = c;
                EXPECT_FALSE(json_plain(text))
                    << "length " << n << " position " << i << " byte " << int(c);
            }
            for (const char c : harmless) {
                std::string text = base;
                text[i] = c;
                EXPECT_EQ(json_plain(text), plain_by_bytes(text))
                    << "length " << n << " position " << i << " byte " << int(c);
            }
        }
    }
}

}  // namespace
}  // namespace insert::swar
