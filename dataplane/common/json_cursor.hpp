// The JSON writer's pieces: a cursor that appends keys, numbers and short strings at a
// position inside a buffer with room reserved for the whole record, without a bounds check
// or a call per piece. Records whose size is bounded are written with it directly (the
// exporter's msg and qp, insert-gen's truth, the correlator's e2e); everything else through
// JsonLine (json_line.hpp), which reserves the room and then writes with these pieces. Keys are
// string literals, so copying one is a few moves rather than a memcpy call; numbers go
// through the digit-pair writer (decimal.hpp). The position lives in the cursor, a local
// of the record's formatter, so that it stays in a register: kept in a longer-lived object
// it was reloaded and stored around every piece (a char store may alias anything), which
// made a record ~2x as expensive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "dataplane/common/decimal.hpp"
#include "dataplane/common/swar.hpp"

namespace insert {

// A JSON string value of up to 46 characters with its quotes (addresses, names), padded so
// that it can be copied whole: a fixed-size copy is a few vector moves, where a copy of
// its own length was a call to memcpy (four per msg record).
struct PaddedString {
    static constexpr std::size_t kMax = 46;
    char chars[kMax + 2] = {};
    uint8_t len = 0;
    // `s` must not be longer than kMax.
    explicit PaddedString(std::string_view s = {}) : len(static_cast<uint8_t>(s.size() + 2)) {
        chars[0] = '"';
        std::memcpy(chars + 1, s.data(), s.size());
        chars[s.size() + 1] = '"';
    }
};

// The leading digits of nanosecond timestamps (all but the last eight) as last written:
// the timestamps of a record, and of records in a row, mostly share them.
struct TimestampHigh {
    uint64_t high = ~uint64_t{0};
    char digits[16];  // at most 12 (2^64 / 10^8 < 10^12), padded for a fixed-size copy
    uint8_t len = 0;
};

// An integer field's absent value: written as null by JsonCursor::opt and JsonLine::opt (the
// correlator's kNone).
inline constexpr int64_t kJsonNull = INT64_MIN;

// Appends the pieces of one record at a position inside a buffer with room for it.
class JsonCursor {
  public:
    explicit JsonCursor(char* p) : p_(p) {}
    char* pos() const { return p_; }

    // Decimal digits in 8-digit chunks (decimal.hpp): most numbers are 19-digit nanosecond
    // timestamps.
    [[gnu::always_inline]] JsonCursor& num(uint64_t v) {
        p_ = decimal::write(p_, v);
        return *this;
    }
    // decimal::write(v), reusing the digits of `v / 10^8` when they are those of `cache`.
    [[gnu::always_inline]] JsonCursor& timestamp(uint64_t v, TimestampHigh& cache) {
        constexpr uint64_t k1e8 = 100'000'000;
        if (v < k1e8) return num(v);
        const uint64_t high = v / k1e8;
        if (high != cache.high) {
            cache.high = high;
            cache.len = static_cast<uint8_t>(decimal::write(cache.digits, high) - cache.digits);
        }
        std::memcpy(p_, cache.digits, sizeof cache.digits);
        p_ = decimal::detail::eight_digits(p_ + cache.len, static_cast<uint32_t>(v % k1e8));
        return *this;
    }
    [[gnu::always_inline]] JsonCursor& padded(const PaddedString& s) {
        std::memcpy(p_, s.chars, sizeof s.chars);
        p_ += s.len;
        return *this;
    }
    // A string literal: its length is a compile-time constant, so the copy is a few moves
    // instead of a memcpy call.
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& lit(const char (&s)[N]) {
        static_assert(N <= kMaxPiece);
        std::memcpy(p_, s, N - 1);
        p_ += N - 1;
        return *this;
    }
    // A short string (addresses, names: within the record's reserved room).
    [[gnu::always_inline]] JsonCursor& str(std::string_view s) {
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    // `,"key":` (first: no comma).
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& key(const char (&k)[N], bool first = false) {
        static_assert(N + 3 <= kMaxPiece);
        if (!first) *p_++ = ',';
        *p_++ = '"';
        std::memcpy(p_, k, N - 1);
        p_ += N - 1;
        *p_++ = '"';
        *p_++ = ':';
        return *this;
    }
    // A key that is not a literal (an enum's name).
    [[gnu::always_inline]] JsonCursor& key(std::string_view k, bool first = false) {
        if (!first) *p_++ = ',';
        *p_++ = '"';
        str(k);
        *p_++ = '"';
        *p_++ = ':';
        return *this;
    }
    // A signed number.
    [[gnu::always_inline]] JsonCursor& signed_num(int64_t v) {
        if (v >= 0) return num(static_cast<uint64_t>(v));
        *p_++ = '-';
        return num(~static_cast<uint64_t>(v) + 1);
    }
    // A signed number, or null for kJsonNull.
    [[gnu::always_inline]] JsonCursor& opt(int64_t v) {
        return v == kJsonNull ? lit("null") : signed_num(v);
    }
    [[gnu::always_inline]] JsonCursor& boolean(bool v) { return v ? lit("true") : lit("false"); }
    // Text from outside the program (names, paths) in quotes, escaped as JSON requires: `"`,
    // `\` and control characters; with `script`, also `<`, `>` and `&`, so that the text
    // can sit inside an HTML <script> element. Needs room for escaped_bytes(text.size()).
    static constexpr std::size_t escaped_bytes(std::size_t n) { return 2 + 6 * n; }
    JsonCursor& text(std::string_view v, bool script = false) {
        *p_++ = '"';
        if (!script && swar::json_plain(v))
            str(v);
        else
            escaped(v, script);
        *p_++ = '"';
        return *this;
    }
    // The inside of text(): `v` escaped, without quotes.
    JsonCursor& escaped(std::string_view v, bool script) {
        static constexpr char kHex[] = "0123456789abcdef";
        for (const char c : v) {
            const auto u = static_cast<unsigned char>(c);
            if (c == '"' || c == '\\') {
                *p_++ = '\\';
                *p_++ = c;
            } else if (u < 0x20 || (script && (c == '<' || c == '>' || c == '&'))) {
                lit("\\u00");
                *p_++ = kHex[u >> 4];
                *p_++ = kHex[u & 0xF];
            } else {
                *p_++ = c;
            }
        }
        return *this;
    }
    // An address in quotes (at most 45 characters): anything with IpAddress's
    // `format(char*)`, which writes the text and returns its length.
    template <class Address>
    [[gnu::always_inline]] JsonCursor& ip(const Address& a) {
        *p_++ = '"';
        p_ += a.format(p_);  // its NUL is overwritten next
        *p_++ = '"';
        return *this;
    }
    // The position itself, for an object nested in the one being written (JsonObject).
    char*& position() { return p_; }
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& field(const char (&k)[N], uint64_t v) {
        return key(k).num(v);
    }
    template <std::size_t N>
    [[gnu::always_inline]] JsonCursor& field_str(const char (&k)[N], std::string_view v) {
        return key(k).lit("\"").str(v).lit("\"");
    }
    template <std::size_t N, typename T>
    [[gnu::always_inline]] JsonCursor& field_opt(const char (&k)[N], const std::optional<T>& v) {
        key(k);
        return v ? num(*v) : lit("null");
    }

    static constexpr std::size_t kMaxPiece = 64;  // longest literal

  private:
    char* p_;
};

}  // namespace insert
