// The field table (dataplane/common/record_fields.hpp) is one a reader can follow: every
// record starts with its `type`, no field is listed twice, every nested path has its parent
// object listed with the right type and a presence no stricter than its own, `when` names a
// field of the record, and the summaries and trace_start carry the schema version.
#include "dataplane/common/record_fields.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "dataplane/common/version.hpp"

namespace insert::records {
namespace {

// The parent of a nested path and the type it must have: `a.b` and `a.*` -> a, an object;
// `a[].b` -> a, an array of objects; "" for a top-level field.
std::pair<std::string, FieldType> parent_of(std::string_view path) {
    const std::size_t dot = path.rfind('.');
    if (dot == std::string_view::npos) return {"", FieldType::object};
    std::string_view parent = path.substr(0, dot);
    if (parent.size() > 2 && parent.substr(parent.size() - 2) == "[]")
        return {std::string(parent.substr(0, parent.size() - 2)), FieldType::objects};
    return {std::string(parent), FieldType::object};
}

const RecordField* find(const RecordType& r, std::string_view path, std::string_view when) {
    for (const RecordField& f : r.fields)
        if (f.path == path && (f.when.empty() || f.when == when)) return &f;
    return nullptr;
}

TEST(RecordFields, every_record_starts_with_its_type) {
    std::set<std::pair<Producer, std::string_view>> seen;
    for (const RecordType& r : record_types()) {
        EXPECT_TRUE(seen.insert({r.producer, r.type}).second) << r.type << " listed twice";
        ASSERT_FALSE(r.fields.empty()) << r.type;
        EXPECT_EQ(r.fields[0].path, "type") << r.type;
        EXPECT_EQ(r.fields[0].type, FieldType::string) << r.type;
        EXPECT_FALSE(r.about.empty()) << r.type;
    }
}

TEST(RecordFields, no_field_is_listed_twice) {
    for (const RecordType& r : record_types()) {
        std::set<std::pair<std::string_view, std::string_view>> seen;
        for (const RecordField& f : r.fields) {
            EXPECT_TRUE(seen.insert({f.when, f.path}).second)
                << r.type << " " << f.path << " " << f.when;
            // A field of some records only must not shadow one of every record.
            if (!f.when.empty()) {
                EXPECT_FALSE(seen.count({"", f.path})) << r.type << " " << f.path << " " << f.when;
            }
            EXPECT_FALSE(f.meaning.empty()) << r.type << " " << f.path;
        }
    }
}

TEST(RecordFields, nested_paths_have_their_parent) {
    for (const RecordType& r : record_types())
        for (const RecordField& f : r.fields) {
            const auto [parent, type] = parent_of(f.path);
            if (parent.empty()) continue;
            const RecordField* p = find(r, parent, f.when);
            ASSERT_NE(p, nullptr) << r.type << " " << f.path << ": no " << parent;
            EXPECT_EQ(p->type, type)
                << r.type << " " << f.path << ": " << parent << " is " << field_type_name(p->type);
            // A field of a parent that may be absent may be absent too.
            if (may_be_absent(p->presence)) {
                EXPECT_TRUE(may_be_absent(f.presence)) << r.type << " " << f.path;
            }
        }
}

TEST(RecordFields, when_names_a_field_of_every_record) {
    for (const RecordType& r : record_types())
        for (const RecordField& f : r.fields) {
            if (f.when.empty()) continue;
            const std::size_t eq = f.when.find('=');
            ASSERT_NE(eq, std::string_view::npos) << r.type << " " << f.path << " " << f.when;
            EXPECT_LT(eq + 1, f.when.size()) << f.when;
            const RecordField* key = find(r, f.when.substr(0, eq), "");
            ASSERT_NE(key, nullptr) << r.type << " " << f.when;
            EXPECT_TRUE(key->when.empty() && key->presence == Presence::always &&
                        key->type == FieldType::string)
                << r.type << " " << f.when;
        }
}

TEST(RecordFields, summaries_and_trace_start_carry_the_schema) {
    int carriers = 0;
    for (const RecordType& r : record_types()) {
        const RecordField* schema = find(r, "schema", "");
        const bool carries = r.type == "summary" || r.type == "trace_start";
        EXPECT_EQ(schema != nullptr, carries) << producer_name(r.producer) << " " << r.type;
        if (!schema) continue;
        ++carriers;
        EXPECT_EQ(schema->type, FieldType::string);
        EXPECT_EQ(schema->presence, Presence::always);
        // Right after `type`: a reader sees the version before any other field.
        EXPECT_EQ(&r.fields[1], schema) << r.type;
    }
    EXPECT_EQ(carriers, 3);  // insert-dp's and insert-correlate's summary, trace_start
    const std::string version(kRecordSchema);
    const std::size_t dot = version.find('.');
    ASSERT_NE(dot, std::string::npos) << version;
    EXPECT_EQ(version.find_first_not_of("0123456789."), std::string::npos) << version;
    EXPECT_EQ(version_with_schema("insert-dp"),
              version_line("insert-dp") + "\nrecord schema " + version + " (docs/records.md)");
}

}  // namespace
}  // namespace insert::records
