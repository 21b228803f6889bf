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
    const bool v4 = is_v4();
    const char* r =
        inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? &bytes[12] : bytes.data(), buf, INET6_ADDRSTRLEN);
    return r ? std::strlen(buf) : 0;
}

std::string IpAddress::to_string() const {
    char buf[INET6_ADDRSTRLEN];
    return std::string(buf, format(buf));
}

}  // namespace insert::proto
