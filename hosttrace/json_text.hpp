// Values of insert-trace's records that JsonLine (dataplane/common/json_line.hpp) does not
// write as they are: text from outside the tracer, which may be any bytes, and pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "dataplane/common/json_line.hpp"

namespace insert::hosttrace {

// Text from outside the tracer (a comm, a device name, a path, --host, an error message) as
// a string field. JsonLine escapes `"`, `\` and control characters (as \u00XX); each byte
// of a sequence that is not valid UTF-8 is written as U+FFFD (dataplane/common/utf8.hpp),
// as the correlator's report does: a JSON reader rejects a line that is not UTF-8.
void text(JsonLine& j, std::string_view key, std::string_view bytes);

// A pointer as "0x" and lowercase hex digits without leading zeros ("0x0" for null), for
// JsonLine::ip: `format` writes the text and returns its length.
struct HexPointer {
    uint64_t value;
    std::size_t format(char* out) const {
        static constexpr char kHex[] = "0123456789abcdef";
        std::size_t digits = 1;
        while (digits < 16 && value >> (4 * digits)) ++digits;
        out[0] = '0';
        out[1] = 'x';
        for (std::size_t d = 0; d < digits; ++d)
            out[1 + digits - d] = kHex[(value >> (4 * d)) & 0xF];
        return 2 + digits;
    }
};

}  // namespace insert::hosttrace
