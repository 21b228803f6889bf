// FieldTable::find_raw: keys matched where they stand in the line, with their closing
// quote, or not at all (the parser then finds the key's end and unescapes it).
#include <gtest/gtest.h>

#include <string>

#include "correlator/input/field_names.hpp"

namespace insert::correlate {
namespace {

// A raw key as the parser sees it: the text after the opening quote, the rest of the line
// after it, and padding (the parser's lines have 64 readable bytes past their end).
std::string raw(std::string key_and_rest) {
    return key_and_rest + std::string(64, '\0');
}

TEST(FieldNames, every_name_is_found_where_it_stands_and_only_with_its_quote) {
    const FieldTable& t = field_table();
    for (unsigned i = 1; i < static_cast<unsigned>(Field::ignored); ++i) {
        const Field f = static_cast<Field>(i);
        const std::string name(t.name(f));
        ASSERT_FALSE(name.empty()) << "field " << i;
        EXPECT_EQ(t.find_raw(raw(name + "\":123,\"next\":1}").c_str()), f) << name;
        EXPECT_EQ(t.find(name), f) << name;
        // Longer or shorter keys are other keys (or none).
        EXPECT_NE(t.find_raw(raw(name + "x\":1}").c_str()), f) << name;
        EXPECT_NE(t.find_raw(raw(name.substr(0, name.size() - 1) + "\":1}").c_str()), f) << name;
    }
}

TEST(FieldNames, unknown_and_escaped_keys_are_left_to_the_slow_path) {
    const FieldTable& t = field_table();
    EXPECT_EQ(t.find_raw(raw("frobnicate\":\"0x1\"}").c_str()), Field::unknown);
    // Keys of the schemas that the correlator does not read are known as such.
    EXPECT_EQ(t.find_raw(raw("ctx\":\"0x1\"}").c_str()), Field::ignored);
    EXPECT_EQ(t.find_raw(raw("t_ns\":5,").c_str()), Field::ignored);
    EXPECT_EQ(t.find_raw(raw("t_nsx\":5,").c_str()), Field::unknown);
    EXPECT_EQ(t.find_raw(raw("\":1}").c_str()), Field::unknown);  // the empty key
    // "dst_qpn" with its underscore escaped: not matched as it stands...
    EXPECT_EQ(t.find_raw(raw("dst\\u005fqpn\":1}").c_str()), Field::unknown);
    // ...but unescaped, it is dst_qpn.
    EXPECT_EQ(t.find("dst_qpn"), Field::dst_qpn);
    EXPECT_EQ(t.find_raw(raw("ringbuf_drops\":0}").c_str()), Field::ringbuf_drops);  // longest
}

}  // namespace
}  // namespace insert::correlate
