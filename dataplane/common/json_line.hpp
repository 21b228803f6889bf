// The JSON writer for records and documents of any size: one JSON Lines record (end()), or
// a document such as the HTML report's chart data (close()), with nested objects and
// arrays. Keys are written in the order given; integers through the digit-pair writer
// (decimal.hpp); kJsonNull as null; text from outside the program (names, paths) escaped
// (JsonCursor::text), names from the program's own tables (word) as they are. Every piece is
// written by JsonCursor (json_cursor.hpp) into room reserved here; JsonLine adds the room,
// the commas and the nesting.
//
// The text is assembled in a buffer of the JsonLine's own and goes into the string in one
// append when it is full or the record ends (end(), close(), or the JsonLine's end of
// life): a record has ~30 keys, and appending each piece to the string was a fifth of
// insert-correlate's instructions. So nothing else may write to the string while a JsonLine
// is open on it: a JsonLine that finds the string changed under it stops the program (a
// bug, not input).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dataplane/common/json_cursor.hpp"

namespace insert {

// How text is escaped: as JSON requires, or also `<`, `>` and `&` for JSON inside an HTML
// <script> element (the report's chart data).
enum class JsonEscape : uint8_t { json, script };

class JsonLine {
  public:
    explicit JsonLine(std::string& out, JsonEscape escape = JsonEscape::json)
        : out_(out), mark_(out.size()), script_(escape == JsonEscape::script) {
        buf_[used_++] = '{';
    }
    ~JsonLine() {
        if (!done_) flush();
    }
    JsonLine(const JsonLine&) = delete;
    JsonLine& operator=(const JsonLine&) = delete;

    // Closes the object and the line.
    void end() { finish("}\n"); }
    // Closes the object only (one nested in another record, or in a JSON document).
    void close() { finish("}"); }

    // Members of the object (or nested object) being written. Keys are literals, and where
    // a length is known at the call the copy is a few moves (a record has ~30 keys); these
    // writers are inline, escaping and flushing are not.
    JsonLine& key(std::string_view k) {
        if (k.size() > kRoom - 4) return long_key(k);
        char* const p = room(k.size() + 4);  // ,"key":
        return advance(JsonCursor(p).key(k, take_first()));
    }
    JsonLine& u(std::string_view k, uint64_t v) { return key(k).value_u(v); }
    JsonLine& i(std::string_view k, int64_t v) { return key(k).value_i(v); }
    JsonLine& opt(std::string_view k, int64_t v) {  // kJsonNull -> null
        key(k);
        return advance(JsonCursor(room(21)).opt(v));
    }
    JsonLine& opt_u(std::string_view k, int64_t v);  // an unsigned value (VA, rkey) or null
    JsonLine& b(std::string_view k, bool v) {
        key(k);
        return advance(JsonCursor(room(5)).boolean(v));
    }
    JsonLine& null(std::string_view k) {
        key(k);
        return advance(JsonCursor(room(4)).lit("null"));
    }
    JsonLine& s(std::string_view k, std::string_view v) {
        key(k);
        append_string(v);
        return *this;
    }
    // A name from the program's own tables (a record type, an opcode, a status): text that
    // needs no escaping, so it is not checked for it. Text from the input goes through s().
    JsonLine& word(std::string_view k, std::string_view v) {
        key(k);
        return advance(JsonCursor(room(v.size() + 2)).lit("\"").str(v).lit("\""));
    }
    // An address (IpAddress, or anything with its `format(char*)`).
    template <class Address>
    JsonLine& ip(std::string_view k, const Address& v) {
        key(k);
        return advance(JsonCursor(room(kMaxAddress + 2)).ip(v));
    }
    // A number with `digits` digits after the point (printf's %.*f).
    JsonLine& fixed(std::string_view k, double v, int digits) {
        return key(k).value_fixed(v, digits);
    }
    // A nested object or array written by the caller: `raw` is inserted as is.
    JsonLine& raw(std::string_view k, std::string_view raw);

    // A nested object or array, closed by end_object() / end_array().
    JsonLine& object(std::string_view k) { return key(k).open('{'); }
    JsonLine& array(std::string_view k) { return key(k).open('['); }
    JsonLine& end_object() { return shut('}'); }
    JsonLine& end_array() { return shut(']'); }

    // Items of the array being written.
    JsonLine& item_u(uint64_t v) {
        comma();
        return value_u(v);
    }
    JsonLine& item_i(int64_t v) {
        comma();
        return value_i(v);
    }
    JsonLine& item_s(std::string_view v) {
        comma();
        append_string(v);
        return *this;
    }
    JsonLine& item_fixed(double v, int digits) {
        comma();
        return value_fixed(v, digits);
    }
    JsonLine& item_object() {
        comma();
        return open('{');
    }
    JsonLine& item_array() {
        comma();
        return open('[');
    }

    // A string value, escaped as this JsonLine escapes (without a key or comma). Names are
    // short: they are written in one piece; longer texts piece by piece.
    void append_string(std::string_view v) {
        if (v.size() > kShortText) return append_escaped(v);
        advance(JsonCursor(room(JsonCursor::escaped_bytes(v.size()))).text(v, script_));
    }

  private:
    static constexpr std::size_t kRoom = 1024;
    static constexpr std::size_t kMaxAddress = 46;  // IpAddress::format's bound
    static constexpr std::size_t kShortText = 128;  // escaped, within kRoom
    static constexpr unsigned kMaxDepth = 63;

    // Room for `n` <= kRoom bytes at the end of the buffer (flushing it first if needed).
    char* room(std::size_t n) {
        if (kRoom - used_ < n) flush();
        return buf_ + used_;
    }
    JsonLine& value_u(uint64_t v) { return advance(JsonCursor(room(20)).num(v)); }
    JsonLine& value_i(int64_t v) { return advance(JsonCursor(room(21)).signed_num(v)); }
    JsonLine& value_fixed(double v, int digits);
    JsonLine& advance(const JsonCursor& c) {
        used_ = static_cast<std::size_t>(c.pos() - buf_);
        return *this;
    }
    // Whether nothing was written yet at this depth (and now something is).
    bool take_first() {
        const bool first = first_ >> depth_ & 1;
        first_ &= ~(uint64_t{1} << depth_);
        return first;
    }
    void comma() {
        if (!take_first()) put(',');
    }
    JsonLine& open(char bracket);
    JsonLine& shut(char bracket);
    void append_escaped(std::string_view v);
    void put(char c) { *room(1) = c, ++used_; }
    void put(std::string_view text);
    JsonLine& long_key(std::string_view k);  // longer than the buffer (no key is)
    // Moves the buffer into the string.
    void flush();
    void finish(std::string_view tail);

    std::string& out_;
    std::size_t mark_;  // out_'s size after the last flush: no other writer in between
    std::size_t used_ = 0;
    uint64_t first_ = 1;   // bit d: nothing written yet at nesting depth d
    uint64_t arrays_ = 0;  // bit d: depth d is an array
    unsigned depth_ = 0;
    bool script_ = false;
    bool done_ = false;
    char buf_[kRoom];
};

}  // namespace insert
