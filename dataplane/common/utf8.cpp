#include "dataplane/common/utf8.hpp"

#include <cstring>

#include "dataplane/common/swar.hpp"

namespace insert {

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

// Words, then an overlapping last word, as swar::json_plain reads.
bool is_ascii(std::string_view s) {
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

bool is_valid_utf8(std::string_view bytes) {
    if (is_ascii(bytes)) return true;
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t n = utf8_sequence(bytes, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

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

std::string valid_utf8(std::string_view bytes) {
    std::string out(3 * bytes.size(), '\0');
    out.resize(valid_utf8(bytes, out.data()));
    return out;
}

}  // namespace insert
