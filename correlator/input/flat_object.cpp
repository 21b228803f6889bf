#include "correlator/input/flat_object.hpp"

#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dataplane/common/swar.hpp"

namespace insert::correlate {

namespace {

// Sixteen bytes at a time where the machine has SSE2 (every x86-64): a value's end is then
// found in the first step for nearly every value these producers write (names, addresses,
// 15-digit addresses and 10-digit times), where eight-byte words took a second step for a
// third of them, and the loop's exit was a mispredicted branch whenever a value's length
// crossed eight. Elsewhere the same in 64-bit words (swar.hpp).
#if defined(__SSE2__)
constexpr std::ptrdiff_t kStep = 16;

// Bytes that end a string's plain text: the quote, and what the general path must see
// (a backslash: an escape; control bytes, invalid unescaped; above 0x7F: UTF-8, which
// simdjson validates). As signed bytes, control bytes and those above 0x7F are the ones
// below 0x20.
unsigned string_stops(const char* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i stops = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
        _mm_cmpgt_epi8(_mm_set1_epi8(0x20), v));
    return static_cast<unsigned>(_mm_movemask_epi8(stops));
}

// Bytes that are not ASCII digits: shifted so that '0'..'9' are the ten lowest signed values.
unsigned digit_stops(const char* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i shifted = _mm_add_epi8(v, _mm_set1_epi8(static_cast<char>(0x80 - '0')));
    return static_cast<unsigned>(
        _mm_movemask_epi8(_mm_cmpgt_epi8(shifted, _mm_set1_epi8(static_cast<char>(0x80 + 9)))));
}

unsigned first_stop(unsigned mask) {
    return static_cast<unsigned>(std::countr_zero(mask));
}
#else
constexpr std::ptrdiff_t kStep = 8;

uint64_t string_stops(const char* p) {
    const uint64_t w = swar::load_word(p);
    return swar::json_specials(w) | (w & swar::kHighBits);
}

uint64_t digit_stops(const char* p) {
    return swar::non_digits(swar::load_word(p));
}

unsigned first_stop(uint64_t mask) {
    return swar::first_byte(mask);
}
#endif

// The end of a string's contents (its closing quote), or null. The scan reads steps, not
// bytes, so that a value's length costs no branch per byte; reads past a value stay within
// the padding after the line.
const char* string_end(const char* p, const char* end) {
    for (; p < end; p += kStep) {
        const auto stops = string_stops(p);
        if (stops == 0) continue;
        const char* stop = p + first_stop(stops);
        return *stop == '"' && stop < end ? stop : nullptr;
    }
    return nullptr;
}

// Past the digits at p; `end` or beyond when they reach it (which the caller rejects).
const char* digits_end(const char* p, const char* end) {
    for (; p < end; p += kStep) {
        const auto stops = digit_stops(p);
        if (stops != 0) return p + first_stop(stops);
    }
    return end;
}

// Past a number's integer part: -?(0|[1-9][0-9]*), not -0; null otherwise. A fraction,
// an exponent or a digit after a leading zero is what follows it, which is no separator:
// the caller's check of the byte after the value rejects those lines.
const char* number_end(const char* p, const char* end) {
    const bool negative = *p == '-';
    if (negative) ++p;
    if (*p == '0') return negative ? nullptr : p + 1;
    if (*p >= '1' && *p <= '9') return digits_end(p, end);
    return nullptr;
}

// Past the literal `word` at p, or null (reads stay within the padding after the line).
const char* literal_end(const char* p, const char* end, std::string_view word) {
    if (std::memcmp(p, word.data(), word.size()) != 0) return nullptr;
    p += word.size();
    return p <= end ? p : nullptr;
}

}  // namespace

bool FlatObject::scan(const char* text, std::size_t len, const FieldTable& fields) {
    if (len < 2 || len > UINT32_MAX || text[len - 1] != '}') return false;
    return scan_line(text, text + len, fields) == text + len;
}

const char* FlatObject::scan_line(const char* text, const char* limit, const FieldTable& fields) {
    n_ = 0;
    unsigned n = 0;  // kept in a register, not in n_, while items_ are written
    // Nothing the scan matches crosses a newline: a key's match (name, quote and colon)
    // holds none, strings stop at control bytes, numbers and literals at what is not theirs.
    // So the scan finds the line's end itself (a search for it first was a pass over
    // every byte), and `limit` only bounds the reads.
    if (limit - text < 2 || text[0] != '{') return nullptr;
    const char* p = text + 1;
    const char* const end = limit;
    uint32_t context = 0;
    for (;;) {
        if (*p != '"') return nullptr;  // also an empty object: no record of ours
        ++p;
        // A known key is matched where it stands (its closing quote and the colon
        // included): first as the key expected in this context, then in the table. Only
        // an unknown key is searched for its end.
        const uint32_t guess = next_slot_[context];
        uint32_t slot = guess;
        if (guess == FieldTable::kNoSlot || !fields.raw_slot_matches(guess, p)) {
            slot = fields.find_raw_slot(p);
            next_slot_[context] = static_cast<uint16_t>(slot);
        }
        context = mix(context, slot);
        Field field = Field::unknown;
        if (slot != FieldTable::kNoSlot) {
            field = fields.raw_field(slot);
            p += fields.raw_length(slot) + 2;
        } else {
            // Before the closing brace: the byte after the key's quote is in the line.
            const char* key_end = string_end(p, end);
            if (!key_end || key_end + 1 >= end || key_end[1] != ':') return nullptr;
            p = key_end + 2;
        }
        // Strings, then numbers, each with one test of the first byte: a switch over the
        // five first bytes was a chain of compares, and which value comes next is what the
        // branch predictor has to learn.
        FlatValue value;
        const char first = *p;
        if (first == '"') {
            const char* close = string_end(p + 1, end);
            if (!close) return nullptr;
            const auto n = static_cast<std::size_t>(close - p - 1);
            value = {p + 1, static_cast<uint32_t>(n), '"'};
            if (field == Field::type || field == Field::verb)  // they decide the keys
                context = mix(context, static_cast<uint32_t>(n) << 16 |
                                           (n ? static_cast<uint8_t>(p[1]) << 8 |
                                                    static_cast<uint8_t>(close[-1])
                                              : 0u));
            p = close + 1;
        } else if (static_cast<unsigned char>(first - '0') < 10 || first == '-') {
            const char* stop = number_end(p, end);
            if (stop) value = {p, static_cast<uint32_t>(stop - p), '0'};
            p = stop;
        } else {
            switch (first) {
                case 't':
                    p = literal_end(p, end, "true");
                    break;
                case 'f':
                    p = literal_end(p, end, "false");
                    break;
                case 'n':
                    p = literal_end(p, end, "null");
                    break;
                default:
                    return nullptr;
            }
            value.kind = first;
        }
        if (!p || p >= end) return nullptr;
        if (field != Field::unknown && field != Field::ignored) {
            if (n == kMaxFields) return nullptr;
            value.field = field;
            items_[n++] = value;
        }
        if (*p == ',') {
            ++p;
            continue;
        }
        n_ = n;
        if (*p != '}') return nullptr;
        const char* const line_end = p + 1;
        return line_end == end || *line_end == '\n' ? line_end : nullptr;
    }
}

}  // namespace insert::correlate
