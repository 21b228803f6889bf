#include "hosttrace/json_text.hpp"

#include <cstring>
#include <string>

#include "dataplane/common/swar.hpp"

namespace insert::hosttrace {

namespace {

// True when every byte is ASCII (the common case: comms, device names, paths): words, then
// an overlapping last word, as swar::json_plain reads.
bool ascii(std::string_view s) {
    const char* p = s.data();
    const std::size_t n = s.size();
    if (n >= 8) {
        for (std::size_t i = 0; i + 8 <= n; i += 8)
            if (swar::load_word(p + i) & swar::kHighBits) return false;
        return (swar::load_word(p + n - 8) & swar::kHighBits) == 0;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (static_cast<unsigned char>(p[i]) >= 0x80) return false;
    return true;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
        if (c == 0xF4 && b(1) > 0x8F) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

// The index of the first byte of the first invalid sequence, or s.size().
std::size_t first_invalid(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) break;
        i += n;
    }
    return i;
}

// Texts up to this long are repaired on the stack (a comm is 15 bytes); longer ones (paths,
// messages: start-up and attach records only) in a string.
constexpr std::size_t kStackText = 128;

}  // namespace

std::size_t valid_utf8(std::string_view bytes, char* out) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t len = utf8_sequence(bytes, i);
        if (len == 0) {
            std::memcpy(out + n, "\xEF\xBF\xBD", 3);
            n += 3;
            ++i;
        } else {
            std::memcpy(out + n, bytes.data() + i, len);
            n += len;
            i += len;
        }
    }
    return n;
}

void text(JsonLine& j, std::string_view key, std::string_view bytes) {
    if (ascii(bytes) || first_invalid(bytes) == bytes.size()) {
        j.s(key, bytes);
        return;
    }
    if (bytes.size() <= kStackText) {
        char repaired[3 * kStackText];
        j.s(key, std::string_view(repaired, valid_utf8(bytes, repaired)));
        return;
    }
    std::string repaired(3 * bytes.size(), '\0');
    repaired.resize(valid_utf8(bytes, repaired.data()));
    j.s(key, repaired);
}

}  // namespace insert::hosttrace
