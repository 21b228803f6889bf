// The common input line, decoded without simdjson: a JSON object whose values are all
// scalars, written without whitespace, escapes or non-ASCII text - the way insert-dp and
// insert-trace write their records. The on-demand parser spent ~100 cycles a field on
// such lines; this scan, one pass over the bytes, about a third of that.
//
// It accepts only valid JSON, and only the part of JSON whose reading is unambiguous, so
// that the general path would read every line it takes the same way (the equivalence test
// checks it on mutated lines): anything else - whitespace between tokens, nested values,
// escapes, bytes outside printable ASCII, fractions, exponents, `-0` - makes scan() return
// false and the line goes to simdjson, which then also words what is wrong with it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "correlator/input/field_names.hpp"
#include "dataplane/common/swar.hpp"

namespace insert::correlate {

// One scalar value as it stands in the line, and the field it belongs to: 16 bytes, as a
// line's ~25 are written by the scan and read back by the readers. kind: '"' a string
// (text: its contents), '0' a number (text: its digits, with a leading '-' if negative),
// 't' true, 'f' false, 'n' null.
struct FlatValue {
    const char* data = nullptr;
    uint32_t size = 0;
    char kind = 'n';
    Field field = Field::unknown;
    std::string_view text() const { return {data, size}; }
};
static_assert(sizeof(FlatValue) == 16);

class FlatObject {
  public:
    // `text` holds the object from its '{' to its '}', followed by at least 16 readable
    // bytes (the input's simdjson padding). Keeps the fields the correlator reads, in line
    // order (duplicates too, as the general path visits them); false when the line is not
    // of the flat form.
    bool scan(const char* text, std::size_t len, const FieldTable& fields);
    // The same for a line whose end is not known yet: the object starts at `text` and must
    // end right before a newline or at `limit`, which bounds the reads (16 readable bytes
    // must follow it). Returns the line's end (the newline or `limit`), or null.
    const char* scan_line(const char* text, const char* limit, const FieldTable& fields);

    const FlatValue* begin() const { return items_.data(); }
    const FlatValue* end() const { return items_.data() + n_; }
    // The first value of a field (as simdjson's find_field_unordered), or null.
    const FlatValue* first(Field f) const {
        for (const FlatValue& item : *this)
            if (item.field == f) return &item;
        return nullptr;
    }

  private:
    static constexpr unsigned kMaxFields = 64;  // more read fields: the general path
    // The raw-table slot of the key expected next, by the line's context: a hash of the
    // keys so far and of the values that decide a record's shape (its type and verb).
    // Producers write each kind of record with the same keys in the same order, so the
    // context names a position in one kind of line, and the guess is right nearly always;
    // a guess by the previous key alone missed where kinds of lines share a key (a fifth
    // of the keys of interleaved verbs, each miss a table search and a mispredicted branch).
    static constexpr unsigned kContextBits = 12;
    static uint32_t mix(uint32_t context, uint32_t x) {
        return ((context ^ x) * 0x9E3779B1u) >> (32 - kContextBits);
    }
    std::array<uint16_t, std::size_t{1} << kContextBits> next_slot_ = [] {
        std::array<uint16_t, std::size_t{1} << kContextBits> none{};
        none.fill(FieldTable::kNoSlot);
        return none;
    }();
    std::array<FlatValue, kMaxFields> items_{};
    unsigned n_ = 0;
};

namespace flat_detail {

// The value of k (1 to 8) ASCII digits at p. The word is read from p: its bytes after the
// digits are shifted out, and what they borrow in the subtraction only reaches them.
inline uint64_t eight_digits_value(const char* p, unsigned k) {
    uint64_t w = (swar::load_word(p) - swar::kOnes * '0') << (8 * (8 - k));  // leading zeros
    w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFull;                         // pairs
    w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFull;                       // fours
    return (w * 10000 + (w >> 32)) & 0xFFFFFFFFull;
}

// Digits to a value, false on overflow. Up to 19 digits cannot overflow and take up to three
// word conversions; longer ones go digit by digit.
inline bool digits_value(std::string_view digits, uint64_t& out) {
    const std::size_t n = digits.size();
    if (n <= 8) {
        out = eight_digits_value(digits.data(), static_cast<unsigned>(n));
        return true;
    }
    const char* last8 = digits.data() + n - 8;
    if (n <= 16) {
        out = eight_digits_value(digits.data(), static_cast<unsigned>(n - 8)) * 100000000ull +
              eight_digits_value(last8, 8);
        return true;
    }
    if (n <= 19) {  // < 10^19 < 2^64
        out = eight_digits_value(digits.data(), static_cast<unsigned>(n - 16)) *
                  10000000000000000ull +
              eight_digits_value(last8 - 8, 8) * 100000000ull + eight_digits_value(last8, 8);
        return true;
    }
    uint64_t x = 0;
    for (const char c : digits) {
        if (__builtin_mul_overflow(x, 10u, &x) ||
            __builtin_add_overflow(x, static_cast<unsigned>(c - '0'), &x))
            return false;
    }
    out = x;
    return true;
}

}  // namespace flat_detail

// Readers with simdjson's semantics for the values they accept; false for a value of
// another type or out of range (the general path then reports the field). They read the
// digits eight bytes at a time: 8 bytes from the number's start must be readable (the
// line's padding).
inline bool flat_u64(const FlatValue& v, uint64_t& out) {
    if (v.kind != '0' || v.data[0] == '-') return false;
    return flat_detail::digits_value(v.text(), out);
}

inline bool flat_i64(const FlatValue& v, int64_t& out) {
    if (v.kind != '0') return false;
    const bool negative = v.data[0] == '-';
    uint64_t x;
    if (!flat_detail::digits_value(negative ? v.text().substr(1) : v.text(), x)) return false;
    constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
    if (x > kMax + (negative ? 1 : 0)) return false;
    out = negative ? static_cast<int64_t>(0 - x) : static_cast<int64_t>(x);
    return true;
}

}  // namespace insert::correlate
