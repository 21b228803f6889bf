// The record encoder: every key and string the correlator writes goes through JsonLine, and
// host and process names come from the input (an attacker chooses its comm).
#include "correlator/output/json_line.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace insert::correlate {
namespace {

TEST(JsonLine, keys_values_and_nulls_in_the_order_written) {
    std::string out;
    JsonLine line(out);
    line.s("type", "e2e")
        .u("big", UINT64_MAX)
        .i("neg", INT64_MIN)
        .opt("none", kNone)
        .opt("some", 7)
        .opt_u("va", -1)
        .b("yes", true)
        .null("peer")
        .ip("ip", *Ip::parse("10.0.0.2"));
    line.end();
    EXPECT_EQ(out,
              "{\"type\":\"e2e\",\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
              "\"none\":null,\"some\":7,\"va\":18446744073709551615,\"yes\":true,\"peer\":null,"
              "\"ip\":\"10.0.0.2\"}\n");
}

TEST(JsonLine, strings_are_escaped_wherever_the_special_character_stands) {
    const std::string cases[] = {"plain", "", "\"lead", "trail\\", "mid\x1b[2Jdle", "\x7f\xc3\xa9"};
    for (const std::string& text : cases) {
        std::string out;
        JsonLine line(out);
        line.s("comm", text);
        line.end();
        const auto parsed = nlohmann::json::parse(out);
        EXPECT_EQ(parsed["comm"].get<std::string>(), text) << out;
    }
    std::string out;
    JsonLine line(out);
    line.s("c", "a\"b\\c\x01");
    EXPECT_EQ(out, "{\"c\":\"a\\\"b\\\\c\\u0001\"");
}

// Keys longer than the stack buffer the short ones are assembled in take the general path.
TEST(JsonLine, long_keys_are_written_whole) {
    const std::string key(100, 'k');
    std::string out;
    JsonLine line(out);
    line.u("a", 1).u(key, 2).u("b", 3);
    line.end();
    EXPECT_EQ(out, "{\"a\":1,\"" + key + "\":2,\"b\":3}\n");
}

}  // namespace
}  // namespace insert::correlate
