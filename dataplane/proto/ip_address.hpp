// An IPv4 or IPv6 address held in one 16-byte form (IPv4 as ::ffff:a.b.c.d) so that
// endpoint keys, hashing and comparison need no branches on the family.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace insert::proto {

struct IpAddress {
    std::array<uint8_t, 16> bytes{};

    static IpAddress v4(uint32_t host_order) {
        IpAddress a;
        a.bytes[10] = 0xFF;
        a.bytes[11] = 0xFF;
        a.bytes[12] = static_cast<uint8_t>(host_order >> 24);
        a.bytes[13] = static_cast<uint8_t>(host_order >> 16);
        a.bytes[14] = static_cast<uint8_t>(host_order >> 8);
        a.bytes[15] = static_cast<uint8_t>(host_order);
        return a;
    }
    static IpAddress v4_bytes(const uint8_t* p) {
        IpAddress a;
        a.bytes[10] = 0xFF;
        a.bytes[11] = 0xFF;
        std::memcpy(&a.bytes[12], p, 4);
        return a;
    }
    static IpAddress v6_bytes(const uint8_t* p) {
        IpAddress a;
        std::memcpy(a.bytes.data(), p, 16);
        return a;
    }
    // Parses "10.0.0.1" or "fd00::1"; nullopt on anything else.
    static std::optional<IpAddress> parse(std::string_view text);

    bool is_v4() const {
        static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
        return std::memcmp(bytes.data(), kPrefix, 12) == 0;
    }
    uint32_t v4_host_order() const {
        return (uint32_t{bytes[12]} << 24) | (uint32_t{bytes[13]} << 16) |
               (uint32_t{bytes[14]} << 8) | bytes[15];
    }
    // "10.0.0.1" or the RFC 5952 text of an IPv6 address.
    std::string to_string() const;
    // Writes the text into buf (at least 46 bytes) and returns its length; no allocation.
    std::size_t format(char* buf) const;

    // Two 8-byte compares: the defaulted std::array comparison ends up in a memcmp call,
    // which the per-packet paths (endpoint keys, pairing) cannot afford.
    friend bool operator==(const IpAddress& a, const IpAddress& b) {
        uint64_t a0, a1, b0, b1;
        std::memcpy(&a0, a.bytes.data(), 8);
        std::memcpy(&a1, a.bytes.data() + 8, 8);
        std::memcpy(&b0, b.bytes.data(), 8);
        std::memcpy(&b1, b.bytes.data() + 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
};

}  // namespace insert::proto
