// MAC addresses as insert-dp's `msg` records write them: "aa:bb:cc:dd:ee:ff".
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace insert::correlate {

using MacAddress = std::array<uint8_t, 6>;

// Six two-digit hex bytes separated by colons (either case); false for anything else.
bool parse_mac(std::string_view text, MacAddress& out);
// Lower case, as insert-dp writes it.
std::string mac_text(const MacAddress& mac);

}  // namespace insert::correlate
