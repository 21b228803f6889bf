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
