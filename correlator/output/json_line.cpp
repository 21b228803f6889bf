#include "correlator/output/json_line.hpp"

#include <cstring>

#include "dataplane/export/decimal.hpp"

namespace insert::correlate {

void JsonLine::append(std::string_view text) {
    out_.append(text.data(), text.size());
}

JsonLine& JsonLine::key(std::string_view k) {
    // `,"key":` assembled on the stack and appended once: a record has ~30 keys, and each
    // append to the string checks its capacity (a quarter of writing an `e2e` record).
    char text[72];
    if (k.size() + 4 > sizeof text) {
        if (!first_) out_.push_back(',');
        first_ = false;
        out_.push_back('"');
        append(k);
        append("\":");
        return *this;
    }
    std::size_t n = 0;
    if (!first_) text[n++] = ',';
    first_ = false;
    text[n++] = '"';
    std::memcpy(text + n, k.data(), k.size());
    n += k.size();
    text[n++] = '"';
    text[n++] = ':';
    append({text, n});
    return *this;
}

JsonLine& JsonLine::u(std::string_view k, uint64_t v) {
    key(k);
    append_u(v);
    return *this;
}

JsonLine& JsonLine::i(std::string_view k, int64_t v) {
    key(k);
    append_i(v);
    return *this;
}

JsonLine& JsonLine::opt(std::string_view k, int64_t v) {
    key(k);
    if (v == kNone)
        append("null");
    else
        append_i(v);
    return *this;
}

JsonLine& JsonLine::opt_u(std::string_view k, int64_t v) {
    key(k);
    if (v == kNone)
        append("null");
    else
        append_u(static_cast<uint64_t>(v));
    return *this;
}

JsonLine& JsonLine::b(std::string_view k, bool v) {
    key(k);
    append(v ? "true" : "false");
    return *this;
}

JsonLine& JsonLine::null(std::string_view k) {
    key(k);
    append("null");
    return *this;
}

JsonLine& JsonLine::s(std::string_view k, std::string_view v) {
    key(k);
    append_string(v);
    return *this;
}

JsonLine& JsonLine::ip(std::string_view k, const Ip& v) {
    char text[64];
    const std::size_t n = v.format(text);
    key(k);
    out_.push_back('"');
    append({text, n});
    out_.push_back('"');
    return *this;
}

JsonLine& JsonLine::raw(std::string_view k, std::string_view raw) {
    key(k);
    append(raw);
    return *this;
}

void JsonLine::append_u(uint64_t v) {
    char digits[24];
    append({digits, static_cast<std::size_t>(decimal::write(digits, v) - digits)});
}

void JsonLine::append_i(int64_t v) {
    if (v < 0) {
        out_.push_back('-');
        append_u(~static_cast<uint64_t>(v) + 1);
    } else {
        append_u(static_cast<uint64_t>(v));
    }
}

void JsonLine::append_string(std::string_view v) {
    out_.push_back('"');
    // The text up to the first character that needs escaping goes in one append (all of it,
    // for nearly every name).
    std::size_t clean = 0;
    while (clean < v.size() && v[clean] != '"' && v[clean] != '\\' &&
           static_cast<unsigned char>(v[clean]) >= 0x20)
        ++clean;
    append(v.substr(0, clean));
    v.remove_prefix(clean);
    for (const char c : v) {
        switch (c) {
            case '"':
                append("\\\"");
                break;
            case '\\':
                append("\\\\");
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    append("\\u00");
                    out_.push_back(kHex[(c >> 4) & 0xF]);
                    out_.push_back(kHex[c & 0xF]);
                } else {
                    out_.push_back(c);
                }
        }
    }
    out_.push_back('"');
}

}  // namespace insert::correlate
