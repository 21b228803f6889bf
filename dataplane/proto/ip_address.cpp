#include "dataplane/proto/ip_address.hpp"

#include <arpa/inet.h>

namespace insert::proto {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
    char buf[INET6_ADDRSTRLEN + 1];
    if (text.empty() || text.size() >= sizeof(buf)) return std::nullopt;
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
    uint8_t raw[16];
    if (inet_pton(AF_INET, buf, raw) == 1) return v4_bytes(raw);
    if (inet_pton(AF_INET6, buf, raw) == 1) return v6_bytes(raw);
    return std::nullopt;
}

std::size_t IpAddress::format(char* buf) const {
    if (is_v4()) {
        // Dotted quad by hand: glibc's inet_ntop formats IPv4 through sprintf, which the
        // exporter would pay twice per message record.
        char* p = buf;
        for (int i = 12; i < 16; ++i) {
            const unsigned octet = bytes[i];
            if (octet >= 100) *p++ = static_cast<char>('0' + octet / 100);
            if (octet >= 10) *p++ = static_cast<char>('0' + octet / 10 % 10);
            *p++ = static_cast<char>('0' + octet % 10);
            if (i != 15) *p++ = '.';
        }
        *p = '\0';
        return static_cast<std::size_t>(p - buf);
    }
    // IPv6: inet_ntop applies RFC 5952's zero compression.
    const char* r = inet_ntop(AF_INET6, bytes.data(), buf, INET6_ADDRSTRLEN);
    return r ? std::strlen(buf) : 0;
}

std::string IpAddress::to_string() const {
    char buf[INET6_ADDRSTRLEN];
    return std::string(buf, format(buf));
}

}  // namespace insert::proto
