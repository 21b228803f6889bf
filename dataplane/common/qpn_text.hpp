// A QPN as people read it: hex, as perftest, tshark and ibv_devinfo print it (0x0000c1 is
// the QP tshark shows; 193 is what nobody types). Human output only - records keep numbers.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace insert {

inline std::string qpn_text(uint64_t qpn) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%06" PRIx64, qpn);
    return text;
}

}  // namespace insert
