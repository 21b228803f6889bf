// Eight bytes at a time in a 64-bit register (SWAR): the flat line scan and the JSON writer
// look for a few byte values in short texts, where a branch per byte cost more than the
// bytes. Classic bit tricks: a byte's high bit is set in the result where the byte matched;
// bits above the first match can be wrong (a borrow propagates), so only "any" and "first"
// are meaningful.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace insert::swar {

static_assert(std::endian::native == std::endian::little, "the word readers assume little-endian");
inline constexpr uint64_t kOnes = 0x0101010101010101ull;
inline constexpr uint64_t kHighBits = 0x8080808080808080ull;

inline uint64_t load_word(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;  // little-endian: the first byte is the lowest
}

// Bytes that are zero.
inline uint64_t zero_bytes(uint64_t w) {
    return (w - kOnes) & ~w & kHighBits;
}

// Bytes equal to c.
inline uint64_t bytes_equal(uint64_t w, char c) {
    return zero_bytes(w ^ (kOnes * static_cast<uint8_t>(c)));
}

// Bytes below 0x20 (control characters).
inline uint64_t control_bytes(uint64_t w) {
    return (w - kOnes * 0x20) & ~w & kHighBits;
}

// Bytes that JSON text cannot hold unescaped: the quote, the backslash, control bytes.
inline uint64_t json_specials(uint64_t w) {
    return bytes_equal(w, '"') | bytes_equal(w, '\\') | control_bytes(w);
}

// Bytes that are not ASCII digits.
inline uint64_t non_digits(uint64_t w) {
    const uint64_t x = w ^ (kOnes * '0');  // digits: 0..9
    return (((x & ~kHighBits) + kOnes * 0x76) | x) & kHighBits;
}

// The index of the first flagged byte (mask from the functions above, nonzero).
inline unsigned first_byte(uint64_t mask) {
    return static_cast<unsigned>(std::countr_zero(mask)) / 8;
}

// True when no byte of `text` is a JSON special. Reads only inside the text: words, then
// an overlapping last word; texts under 8 bytes as two overlapping 4-byte halves.
inline bool json_plain(std::string_view text) {
    const char* p = text.data();
    const std::size_t n = text.size();
    if (n >= 8) {
        for (std::size_t i = 0; i + 8 <= n; i += 8)
            if (json_specials(load_word(p + i))) return false;
        return json_specials(load_word(p + n - 8)) == 0;
    }
    if (n >= 4) {
        uint32_t lo, hi;
        std::memcpy(&lo, p, 4);
        std::memcpy(&hi, p + n - 4, 4);
        return json_specials(lo | (uint64_t{hi} << 32)) == 0;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] == '"' || p[i] == '\\' || static_cast<unsigned char>(p[i]) < 0x20) return false;
    return true;
}

}  // namespace insert::swar
