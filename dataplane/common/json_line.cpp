#include "dataplane/common/json_line.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace insert {

void JsonLine::flush() {
    if (out_.size() != mark_) {
        std::fprintf(stderr, "JsonLine: the string was written to while a record was open\n");
        std::abort();
    }
    out_.append(buf_, used_);
    used_ = 0;
    mark_ = out_.size();
}

void JsonLine::finish(std::string_view tail) {
    while (depth_ > 0) shut('\0');  // what the caller left open
    put(tail);
    flush();
    done_ = true;
}

void JsonLine::put(std::string_view text) {
    if (text.size() <= kRoom) {
        std::memcpy(room(text.size()), text.data(), text.size());
        used_ += text.size();
        return;
    }
    flush();  // longer than the buffer: straight into the string
    out_.append(text.data(), text.size());
    mark_ = out_.size();
}

JsonLine& JsonLine::long_key(std::string_view k) {
    if (!take_first()) put(',');
    put('"');
    put(k);
    put(std::string_view("\":"));
    return *this;
}

JsonLine& JsonLine::opt_u(std::string_view k, int64_t v) {
    key(k);
    if (v == kJsonNull) return advance(JsonCursor(room(4)).lit("null"));
    return advance(JsonCursor(room(20)).num(static_cast<uint64_t>(v)));
}

JsonLine& JsonLine::raw(std::string_view k, std::string_view raw) {
    key(k);
    put(raw);
    return *this;
}

JsonLine& JsonLine::value_fixed(double v, int digits) {
    char text[64];
    const int n = std::snprintf(text, sizeof text, "%.*f", digits, v);
    put(std::string_view(text, n > 0 ? std::min<std::size_t>(n, sizeof text - 1) : 0));
    return *this;
}

// The kind of each open level is the bracket that closes it, kept as a bit: 1 for an array.
JsonLine& JsonLine::open(char bracket) {
    if (depth_ == kMaxDepth) {
        std::fprintf(stderr, "JsonLine: nested deeper than %u levels\n", kMaxDepth);
        std::abort();
    }
    put(bracket);
    ++depth_;
    first_ |= uint64_t{1} << depth_;
    arrays_ = (arrays_ & ~(uint64_t{1} << depth_)) | uint64_t{bracket == '['} << depth_;
    return *this;
}

JsonLine& JsonLine::shut(char bracket) {
    const bool array = arrays_ >> depth_ & 1;
    if (depth_ == 0 || (bracket != '\0' && array != (bracket == ']'))) {
        std::fprintf(stderr, "JsonLine: '%c' closes no open %s\n", bracket,
                     bracket == ']' ? "array" : "object");
        std::abort();
    }
    put(array ? ']' : '}');
    --depth_;
    return *this;
}

void JsonLine::append_escaped(std::string_view v) {
    put('"');
    // In pieces that fit the buffer's room.
    for (std::size_t at = 0; at < v.size(); at += kShortText) {
        const std::string_view piece = v.substr(at, kShortText);
        advance(JsonCursor(room(JsonCursor::escaped_bytes(piece.size()))).escaped(piece, script_));
    }
    put('"');
}

}  // namespace insert
