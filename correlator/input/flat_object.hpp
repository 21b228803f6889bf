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

namespace insert::correlate {

// One scalar value as it stands in the line. kind: '"' a string (text: its contents), '0' a
// number (text: its digits, with a leading '-' if negative), 't' true, 'f' false, 'n' null.
struct FlatValue {
    std::string_view text;
    char kind = 'n';
};

struct FlatField {
    Field field = Field::unknown;
    FlatValue value;
};

class FlatObject {
  public:
    // `text` holds the object from its '{' to its '}', followed by at least 16 readable
    // bytes (the input's simdjson padding). Keeps the fields the correlator reads, in line
    // order (duplicates too, as the general path visits them); false when the line is not
    // of the flat form.
    bool scan(const char* text, std::size_t len, const FieldTable& fields);

    const FlatField* begin() const { return items_.data(); }
    const FlatField* end() const { return items_.data() + n_; }
    // The first value of a field (as simdjson's find_field_unordered), or null.
    const FlatValue* first(Field f) const {
        for (const FlatField& item : *this)
            if (item.field == f) return &item.value;
        return nullptr;
    }

  private:
    static constexpr unsigned kMaxFields = 64;  // more read fields: the general path
    // The raw-table slot of the key that followed each key (by its slot; kNoSlot: an unknown
    // key) in the last line that had it, and of a line's first key.
    static constexpr uint32_t kLineStart = FieldTable::kNoSlot + 1;
    std::array<uint16_t, kLineStart + 1> next_slot_ = [] {
        std::array<uint16_t, kLineStart + 1> none{};
        none.fill(FieldTable::kNoSlot);
        return none;
    }();
    std::array<FlatField, kMaxFields> items_{};
    unsigned n_ = 0;
};

// Readers with simdjson's semantics for the values they accept; false for a value of
// another type or out of range (the general path then reports the field). They read the
// digits eight bytes at a time: 8 bytes from the number's start must be readable (the
// line's padding).
bool flat_u64(const FlatValue& v, uint64_t& out);
bool flat_i64(const FlatValue& v, int64_t& out);

}  // namespace insert::correlate
