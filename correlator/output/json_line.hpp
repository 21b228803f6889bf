// Builds one JSON Lines record into a string: keys in the order written, integers through
// the digit-pair writer the dataplane's exporter uses (dataplane/export/decimal.hpp), null
// for absent values (kNone). Strings are escaped (comm and host names are the only text
// an input controls).
//
// The record is assembled in a buffer of the JsonLine's own and goes into the string in
// one append when it ends (end(), close(), or the JsonLine's end of life): a record has
// ~30 keys, and appending each piece to the string was a fifth of insert-correlate's
// instructions. So nothing else may write to the string while a JsonLine is open on it:
// a JsonLine that finds the string changed under it stops the program (a bug, not input).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "correlator/input/records.hpp"
#include "correlator/input/swar.hpp"
#include "dataplane/export/decimal.hpp"

namespace insert::correlate {

class JsonLine {
  public:
    explicit JsonLine(std::string& out) : out_(out), mark_(out.size()) { buf_[used_++] = '{'; }
    ~JsonLine() {
        if (!done_) flush();
    }
    JsonLine(const JsonLine&) = delete;
    JsonLine& operator=(const JsonLine&) = delete;

    // Closes the object and the line.
    void end() { finish("}\n"); }
    // Closes the object only (one nested in another record, or in a JSON document).
    void close() { finish("}"); }

    // The writers of keys, numbers, literals and plain strings are inline: keys are
    // literals, and where a length is known at the call its copy is a few moves (a record
    // has ~30 keys). Escaping, addresses and flushing are not.
    JsonLine& key(std::string_view k) {
        if (k.size() > kRoom - 4) return long_key(k);
        char* p = room(k.size() + 4);  // ,"key":
        char* const start = p;
        if (!first_) *p++ = ',';
        first_ = false;
        *p++ = '"';
        std::memcpy(p, k.data(), k.size());
        p += k.size();
        *p++ = '"';
        *p++ = ':';
        used_ += static_cast<std::size_t>(p - start);
        return *this;
    }
    JsonLine& u(std::string_view k, uint64_t v) {
        key(k);
        append_u(v);
        return *this;
    }
    JsonLine& i(std::string_view k, int64_t v) {
        key(k);
        append_i(v);
        return *this;
    }
    JsonLine& opt(std::string_view k, int64_t v) {  // kNone -> null
        key(k);
        if (v == kNone)
            put_small("null");
        else
            append_i(v);
        return *this;
    }
    JsonLine& opt_u(std::string_view k, int64_t v);  // an unsigned value (VA, rkey) or kNone
    JsonLine& b(std::string_view k, bool v) {
        key(k);
        put_small(v ? std::string_view("true") : std::string_view("false"));
        return *this;
    }
    JsonLine& null(std::string_view k) {
        key(k);
        put_small("null");
        return *this;
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
        char* p = room(v.size() + 2);
        p[0] = '"';
        std::memcpy(p + 1, v.data(), v.size());
        p[v.size() + 1] = '"';
        used_ += v.size() + 2;
        return *this;
    }
    JsonLine& ip(std::string_view k, const Ip& v);
    // A nested object or array written by the caller: `raw` is inserted as is.
    JsonLine& raw(std::string_view k, std::string_view raw);

    void append_u(uint64_t v) {
        char* p = room(20);  // UINT64_MAX has 20 digits
        used_ += static_cast<std::size_t>(decimal::write(p, v) - p);
    }
    void append_i(int64_t v) {
        if (v < 0) {
            put('-');
            append_u(~static_cast<uint64_t>(v) + 1);
        } else {
            append_u(static_cast<uint64_t>(v));
        }
    }
    // Names and enum texts are short and need no escape: they go in one piece.
    void append_string(std::string_view v) {
        if (v.size() > kShortText || !plain(v)) return append_escaped(v);
        char* p = room(v.size() + 2);
        p[0] = '"';
        std::memcpy(p + 1, v.data(), v.size());
        p[v.size() + 1] = '"';
        used_ += v.size() + 2;
    }

  private:
    static constexpr std::size_t kRoom = 1024;
    // Room for `n` <= kRoom bytes at the end of the buffer (flushing it first if needed).
    char* room(std::size_t n) {
        if (kRoom - used_ < n) flush();
        return buf_ + used_;
    }
    static constexpr std::size_t kShortText = 256;
    static bool plain(std::string_view v) { return swar::json_plain(v); }
    void append_escaped(std::string_view v);
    void put(char c) { *room(1) = c, ++used_; }
    void put(std::string_view text);
    void put_small(std::string_view text) {  // text.size() <= kRoom
        std::memcpy(room(text.size()), text.data(), text.size());
        used_ += text.size();
    }
    JsonLine& long_key(std::string_view k);  // longer than the buffer (no key is)
    // Moves the buffer into the string.
    void flush();
    void finish(std::string_view tail);

    std::string& out_;
    std::size_t mark_;  // out_'s size after the last flush: no other writer in between
    std::size_t used_ = 0;
    bool first_ = true;
    bool done_ = false;
    char buf_[kRoom];
};

}  // namespace insert::correlate
