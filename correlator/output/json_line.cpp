#include "correlator/output/json_line.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace insert::correlate {

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
    if (!first_) put(',');
    first_ = false;
    put('"');
    put(k);
    put(std::string_view("\":"));
    return *this;
}

JsonLine& JsonLine::opt_u(std::string_view k, int64_t v) {
    key(k);
    if (v == kNone)
        put(std::string_view("null"));
    else
        append_u(static_cast<uint64_t>(v));
    return *this;
}

JsonLine& JsonLine::ip(std::string_view k, const Ip& v) {
    key(k);
    constexpr std::size_t kMaxText = 46;  // IpAddress::format's bound
    char* p = room(kMaxText + 2);
    *p = '"';
    const std::size_t n = v.format(p + 1);
    p[n + 1] = '"';
    used_ += n + 2;
    return *this;
}

JsonLine& JsonLine::raw(std::string_view k, std::string_view raw) {
    key(k);
    put(raw);
    return *this;
}

void JsonLine::append_escaped(std::string_view v) {
    put('"');
    // The text up to the first character that needs escaping goes in one piece (all of it,
    // for nearly every name).
    std::size_t clean = 0;
    while (clean < v.size() && v[clean] != '"' && v[clean] != '\\' &&
           static_cast<unsigned char>(v[clean]) >= 0x20)
        ++clean;
    put(v.substr(0, clean));
    v.remove_prefix(clean);
    for (const char c : v) {
        switch (c) {
            case '"':
                put(std::string_view("\\\""));
                break;
            case '\\':
                put(std::string_view("\\\\"));
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    put(std::string_view("\\u00"));
                    put(kHex[(c >> 4) & 0xF]);
                    put(kHex[c & 0xF]);
                } else {
                    put(c);
                }
        }
    }
    put('"');
}

}  // namespace insert::correlate
