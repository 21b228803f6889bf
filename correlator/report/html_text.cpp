#include "correlator/report/html_text.hpp"

#include <cstdint>

namespace insert::correlate::report {

void append_html(std::string& out, std::string_view text) {
    for (const char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
}

std::string html(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_html(out, text);
    return out;
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80) return 1;
    const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (c == 0xF0 && b(1) < 0x90) return 0;
        if (c == 0xF4 && b(1) > 0x8F) return 0;
        return 4;
    }
    return 0;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t n = utf8_sequence(bytes, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string valid_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t n = utf8_sequence(bytes, i);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            ++i;
        } else {
            out.append(bytes.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::string inline_script_text(std::string text) {
    // "<\/script" and "<\!--": in a string or a regular expression literal JavaScript reads
    // "\/" as "/" and "\!" as "!"; minified libraries have these only inside literals.
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        out += c;
        if (c != '<' || i + 1 >= text.size()) continue;
        const std::string_view rest = std::string_view(text).substr(i + 1);
        const auto starts_ci = [&](std::string_view word) {
            if (rest.size() < word.size()) return false;
            for (std::size_t k = 0; k < word.size(); ++k)
                if ((rest[k] | 0x20) != word[k] && rest[k] != word[k]) return false;
            return true;
        };
        if (starts_ci("/script")) out += '\\';
        if (rest.substr(0, 3) == "!--") out += '\\';
    }
    return out;
}

}  // namespace insert::correlate::report
