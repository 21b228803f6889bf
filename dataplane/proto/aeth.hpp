// AETH syndrome decoding (IBTA vol.1 9.7.5.1.1; SPEC.md section 1).
#pragma once

#include <cstdint>

namespace insert::proto {

enum class AethClass : uint8_t { ack, rnr_nak, reserved, nak };

// NAK codes as SPEC.md groups them: 4 and every other value count as invalid request.
enum class NakCode : uint8_t { psn_seq_error, invalid_request, remote_access, remote_op };

constexpr AethClass aeth_class(uint8_t syndrome) {
    return static_cast<AethClass>((syndrome >> 5) & 0x3);
}

constexpr NakCode nak_code(uint8_t syndrome) {
    switch (syndrome & 0x1F) {
        case 0:
            return NakCode::psn_seq_error;
        case 2:
            return NakCode::remote_access;
        case 3:
            return NakCode::remote_op;
        default:
            return NakCode::invalid_request;
    }
}

constexpr bool nak_is_fatal(NakCode code) {
    return code != NakCode::psn_seq_error;
}

// Syndromes a responder sends.
constexpr uint8_t aeth_ack(uint8_t credits = 0x1F) {
    return static_cast<uint8_t>(credits & 0x1F);
}
constexpr uint8_t aeth_rnr_nak(uint8_t timer) {
    return static_cast<uint8_t>(0x20 | (timer & 0x1F));
}
constexpr uint8_t aeth_nak(NakCode code) {
    constexpr uint8_t wire[] = {0, 1, 2, 3};
    return static_cast<uint8_t>(0x60 | wire[static_cast<uint8_t>(code)]);
}

}  // namespace insert::proto
