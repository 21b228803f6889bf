// Text from records placed into an HTML page. Every string a record carries may come from
// an attacker (a process names itself: comm; insert-trace --host; evidence), so it goes
// into the page only through these functions: as HTML text, or as a JSON string inside a
// <script> block, where "</script>" and "<!--" could otherwise end or confuse the block.
#pragma once

#include <string>
#include <string_view>

#include "dataplane/common/utf8.hpp"

namespace insert::correlate::report {

// & < > " ' as character references: safe in element content and quoted attributes.
void append_html(std::string& out, std::string_view text);
std::string html(std::string_view text);

// The bytes as valid UTF-8 (dataplane/common/utf8.hpp): each byte of an invalid sequence
// becomes U+FFFD. A comm cut at 15 bytes by the kernel can end in half a character; JSON
// parsers reject such lines.
using insert::is_valid_utf8;
using insert::valid_utf8;

// A JavaScript library's text made safe to inline in <script>: "</script" and "<!--"
// cannot appear inside (both are escaped the way JavaScript reads them the same).
std::string inline_script_text(std::string text);

}  // namespace insert::correlate::report
