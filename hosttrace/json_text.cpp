#include "hosttrace/json_text.hpp"

#include <cstring>
#include <string>

#include "dataplane/common/utf8.hpp"

namespace insert::hosttrace {

namespace {

// Texts up to this long are repaired on the stack (a comm is 15 bytes); longer ones (paths,
// messages: start-up and attach records only) in a string.
constexpr std::size_t kStackText = 128;

}  // namespace

void text(JsonLine& j, std::string_view key, std::string_view bytes) {
    if (is_valid_utf8(bytes)) {
        j.s(key, bytes);
        return;
    }
    if (bytes.size() <= kStackText) {
        char repaired[3 * kStackText];
        j.s(key, std::string_view(repaired, valid_utf8(bytes, repaired)));
        return;
    }
    std::string repaired(3 * bytes.size(), '\0');
    repaired.resize(valid_utf8(bytes, repaired.data()));
    j.s(key, repaired);
}

}  // namespace insert::hosttrace
