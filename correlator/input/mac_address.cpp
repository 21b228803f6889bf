#include "correlator/input/mac_address.hpp"

namespace insert::correlate {

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

bool parse_mac(std::string_view text, MacAddress& out) {
    if (text.size() != 17) return false;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_digit(text[3 * i]), lo = hex_digit(text[3 * i + 1]);
        if (hi < 0 || lo < 0 || (i + 1 < out.size() && text[3 * i + 2] != ':')) return false;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

std::string mac_text(const MacAddress& mac) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (uint8_t b : mac) {
        if (!text.empty()) text += ':';
        text += kHex[b >> 4];
        text += kHex[b & 0xF];
    }
    return text;
}

}  // namespace insert::correlate
