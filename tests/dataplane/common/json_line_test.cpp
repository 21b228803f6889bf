// The JSON writer (dataplane/common/json_line.hpp): every record the correlator and
// insert-trace write, and the HTML report's chart data, go through JsonLine, and host and
// process names come from the input (an attacker chooses its comm).
#include "dataplane/common/json_line.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "correlator/input/records.hpp"

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
    // Also around the length where strings stop being written in one piece (128 bytes).
    const std::string cases[] = {"plain",
                                 "",
                                 "\"lead",
                                 "trail\\",
                                 "mid\x1b[2Jdle",
                                 "\x7f\xc3\xa9",
                                 std::string(128, 'a'),
                                 std::string(129, 'a'),
                                 std::string(127, 'a') + "\"",
                                 std::string(128, 'a') + "\x01",
                                 std::string(256, 'a'),
                                 std::string(257, 'a'),
                                 std::string(255, 'a') + "\"",
                                 std::string(3000, '\\')};
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
    line.close();
    EXPECT_EQ(out, "{\"c\":\"a\\\"b\\\\c\\u0001\"}");
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

// A record is assembled apart and written whole: what is longer than the assembly buffer
// (1 KB) goes straight into the string, in its place.
TEST(JsonLine, records_and_values_longer_than_the_buffer_are_written_whole_and_in_order) {
    const std::string big(5000, 'x'), key(1500, 'k');
    std::string out = "before\n";
    {
        JsonLine line(out);
        for (int i = 0; i < 200; ++i) line.u(std::to_string(i), static_cast<uint64_t>(i));
        line.s("big", big).u(key, 7).s("after", "y");
        line.end();
    }
    ASSERT_EQ(out.substr(0, 7), "before\n");
    const auto parsed = nlohmann::json::parse(out.substr(7));
    EXPECT_EQ(parsed["0"], 0);
    EXPECT_EQ(parsed["199"], 199);
    EXPECT_EQ(parsed["big"], big);
    EXPECT_EQ(parsed[key], 7);
    EXPECT_EQ(parsed["after"], "y");
    EXPECT_EQ(out.back(), '\n');
}

// A JsonLine destroyed without end() or close() still writes what it has (temporaries
// that build a nested object), and one that finds its string written to by someone else
// while it is open stops the program rather than interleave the two.
TEST(JsonLine, an_unclosed_line_is_written_at_its_end_of_life_and_a_second_writer_is_fatal) {
    std::string out;
    JsonLine(out).u("a", 1);
    EXPECT_EQ(out, "{\"a\":1");
    EXPECT_DEATH(
        {
            std::string s;
            JsonLine line(s);
            line.u("a", 1);
            s += '}';  // the old way of closing a nested object, now a bug
            line.end();
        },
        "written to while a record was open");
}

TEST(JsonLine, nested_objects_and_arrays_take_their_commas_and_brackets) {
    std::string out;
    JsonLine line(out);
    line.object("a").array("b").item_u(1).item_i(-2).item_object().s("c", "d").end_object();
    line.item_array().item_fixed(0.5, 3).end_array().end_array();
    line.array("e").end_array().end_object();
    line.fixed("f", 1.25, 1).array("g").item_s("x").item_s("y");  // left open: end() closes
    line.end();
    EXPECT_EQ(out,
              "{\"a\":{\"b\":[1,-2,{\"c\":\"d\"},[0.500]],\"e\":[]},\"f\":1.2,"
              "\"g\":[\"x\",\"y\"]}\n");
}

// The report's chart data sits inside a <script> element: no text can end it or open a
// comment there, whatever its length.
TEST(JsonLine, script_escaping_leaves_no_markup_in_short_or_long_text) {
    const std::string evil = "</script><!--&>";
    for (const std::string& text : {evil, std::string(200, 'a') + evil + std::string(200, 'b')}) {
        std::string out;
        JsonLine line(out, JsonEscape::script);
        line.s("label", text).array("l").item_s(text).end_array();
        line.close();
        EXPECT_EQ(out.find_first_of("<>&"), std::string::npos) << out;
        const auto parsed = nlohmann::json::parse(out);
        EXPECT_EQ(parsed["label"].get<std::string>(), text);
        EXPECT_EQ(parsed["l"][0].get<std::string>(), text);
    }
}

TEST(JsonLine, closing_what_is_not_open_is_fatal) {
    EXPECT_DEATH(
        {
            std::string s;
            JsonLine line(s);
            line.array("a").end_object();
        },
        "closes no open object");
    EXPECT_DEATH(
        {
            std::string s;
            JsonLine(s).end_array();
        },
        "closes no open array");
}

}  // namespace
}  // namespace insert::correlate
