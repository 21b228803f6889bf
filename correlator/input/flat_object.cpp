#include "correlator/input/flat_object.hpp"

#include <cstring>

#include "correlator/input/swar.hpp"

namespace insert::correlate {

namespace {

using swar::first_byte;
using swar::kHighBits;
using swar::kOnes;
using swar::load_word;
using swar::non_digits;

// Bytes that end a string's plain text: the quote, and what the general path must see
// (a backslash: an escape; control bytes, invalid unescaped; above 0x7F: UTF-8, which
// simdjson validates). The scan reads words, not bytes, so that a value's length costs no
// branch per byte; reads past a value stay within the padding after the line.
uint64_t string_stops(uint64_t w) {
    return swar::json_specials(w) | (w & kHighBits);
}

// The end of a string's contents (its closing quote), or null.
const char* string_end(const char* p, const char* end) {
    for (; p < end; p += 8) {
        const uint64_t stops = string_stops(load_word(p));
        if (stops == 0) continue;
        const char* stop = p + first_byte(stops);
        return *stop == '"' && stop < end ? stop : nullptr;
    }
    return nullptr;
}

// Past the digits at p.
const char* digits_end(const char* p) {
    for (;; p += 8) {
        const uint64_t stops = non_digits(load_word(p));
        if (stops != 0) return p + first_byte(stops);
    }
}

// Past a number's integer part: -?(0|[1-9][0-9]*), not -0; null otherwise. A fraction,
// an exponent or a digit after a leading zero is what follows it, which is no separator:
// the caller's check of the byte after the value rejects those lines.
const char* number_end(const char* p) {
    const bool negative = *p == '-';
    if (negative) ++p;
    if (*p == '0') return negative ? nullptr : p + 1;
    if (*p >= '1' && *p <= '9') return digits_end(p);
    return nullptr;
}

// Past the literal `word` at p, or null (reads stay within the padding after the line).
const char* literal_end(const char* p, const char* end, std::string_view word) {
    if (std::memcmp(p, word.data(), word.size()) != 0) return nullptr;
    p += word.size();
    return p <= end ? p : nullptr;
}

// The value of k (1 to 8) ASCII digits at p. The word is read from p: its bytes after the
// digits are shifted out, and what they borrow in the subtraction only reaches them.
uint64_t eight_digits_value(const char* p, unsigned k) {
    uint64_t w = (load_word(p) - kOnes * '0') << (8 * (8 - k));  // leading zeros
    w = (w * 10 + (w >> 8)) & 0x00FF00FF00FF00FFull;             // pairs
    w = (w * 100 + (w >> 16)) & 0x0000FFFF0000FFFFull;           // fours
    return (w * 10000 + (w >> 32)) & 0xFFFFFFFFull;
}

// Digits to a value, false on overflow. Up to 19 digits cannot overflow and take up to three
// word conversions; longer ones go digit by digit.
bool digits_value(std::string_view digits, uint64_t& out) {
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

}  // namespace

bool FlatObject::scan(const char* text, std::size_t len, const FieldTable& fields) {
    n_ = 0;
    unsigned n = 0;  // kept in a register, not in n_, while items_ are written
    if (len < 2 || text[0] != '{' || text[len - 1] != '}') return false;
    const char* p = text + 1;
    const char* const end = text + len;
    uint32_t previous = kLineStart;
    for (;;) {
        if (*p != '"') return false;  // also an empty object: no record of ours
        ++p;
        // A known key is matched where it stands (its closing quote included): first as
        // the key that followed the previous one last time, then in the table. Only an
        // unknown key is searched for its end.
        const uint32_t guess = next_slot_[previous];
        uint32_t slot = guess;
        if (guess == FieldTable::kNoSlot || !fields.raw_slot_matches(guess, p)) {
            slot = fields.find_raw_slot(p);
            next_slot_[previous] = static_cast<uint16_t>(slot);
        }
        previous = slot;
        Field field = Field::unknown;
        if (slot != FieldTable::kNoSlot) {
            field = fields.raw_field(slot);
            p += fields.raw_length(slot) + 1;
        } else {
            const char* key_end = string_end(p, end);
            if (!key_end) return false;
            p = key_end + 1;
        }
        if (p >= end || *p != ':') return false;
        ++p;
        FlatValue value;
        switch (*p) {
            case '"': {
                const char* close = string_end(p + 1, end);
                if (!close) return false;
                value = {{p + 1, static_cast<std::size_t>(close - p - 1)}, '"'};
                p = close + 1;
                break;
            }
            case 't':
                p = literal_end(p, end, "true");
                value.kind = 't';
                break;
            case 'f':
                p = literal_end(p, end, "false");
                value.kind = 'f';
                break;
            case 'n':
                p = literal_end(p, end, "null");
                value.kind = 'n';
                break;
            default: {
                const char* stop = number_end(p);
                if (stop) value = {{p, static_cast<std::size_t>(stop - p)}, '0'};
                p = stop;
                break;
            }
        }
        if (!p || p >= end) return false;
        if (field != Field::unknown && field != Field::ignored) {
            if (n == kMaxFields) return false;
            items_[n++] = {field, value};
        }
        if (*p == ',') {
            ++p;
            continue;
        }
        n_ = n;
        return *p == '}' && p + 1 == end;
    }
}

bool flat_u64(const FlatValue& v, uint64_t& out) {
    if (v.kind != '0' || v.text[0] == '-') return false;
    return digits_value(v.text, out);
}

bool flat_i64(const FlatValue& v, int64_t& out) {
    if (v.kind != '0') return false;
    const bool negative = v.text[0] == '-';
    uint64_t x;
    if (!digits_value(negative ? v.text.substr(1) : v.text, x)) return false;
    constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
    if (x > kMax + (negative ? 1 : 0)) return false;
    out = negative ? static_cast<int64_t>(0 - x) : static_cast<int64_t>(x);
    return true;
}

}  // namespace insert::correlate
