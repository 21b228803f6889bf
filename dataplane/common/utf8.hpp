// UTF-8 as RFC 3629 has it (no overlong forms, no surrogates, nothing above U+10FFFF), for
// text from outside the programs - a process names itself with any 15 bytes, and the
// kernel cuts a longer name mid-character - that goes into JSON, which must be UTF-8:
// insert-trace's records and the correlator's HTML report write each byte of an invalid
// sequence as U+FFFD.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace insert {

// The length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

// True when every byte is ASCII (the common case: comms, device names, paths), a word at a
// time.
bool is_ascii(std::string_view s);

bool is_valid_utf8(std::string_view bytes);

// `bytes` with each byte of an invalid sequence replaced by U+FFFD, written to `out` (room
// for 3 * bytes.size()); returns the length.
std::size_t valid_utf8(std::string_view bytes, char* out);
std::string valid_utf8(std::string_view bytes);

}  // namespace insert
