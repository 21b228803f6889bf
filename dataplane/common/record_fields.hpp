// Every record the programs write, as one table: per producer and record type, every field
// (nested ones as dotted paths), its type, unit, whether it may be null or absent, and what
// it means. docs/records.md is made from it (tests/dataplane/common/record_fields_print.cpp,
// `ninja -C build records-doc`; a test fails when the committed page differs), and the
// tests that run the real writers fail when one writes a field the table lacks, or the
// table lists one that no record of the run had (docs/records.md "Checked").
//
// Paths: `a.b` is field b of object a; `a.*` any key of an open map (keys the input names:
// symbols, functions); `a[].b` field b of every object in array a. A field that exists only
// in some records of a type names them in `when`: "kind=nak|rnr_nak" - the record's `kind`
// is one of these. Adding a field to a writer: one line here, then `ninja -C build
// records-doc` (docs/extending.md).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace insert::records {

enum class Producer : uint8_t { insert_dp, insert_trace, insert_correlate };
std::string_view producer_name(Producer p);  // "insert-dp", ...

// The JSON type of a value (an array's: of its items).
enum class FieldType : uint8_t {
    integer,
    number,  // with a fraction
    string,
    boolean,
    object,
    strings,  // array of strings
    integers,
    objects,
};
std::string_view field_type_name(FieldType t);  // "integer", ..., "array of objects"

// Whether a record of its type (and `when`) always has the field, and whether its value
// may be null.
enum class Presence : uint8_t {
    always,            // present, never null
    nullable,          // present, null when the value is unknown or does not apply
    conditional,       // absent from some records (the meaning says when), never null
    conditional_null,  // absent from some, null in others
};
inline bool may_be_null(Presence p) {
    return p == Presence::nullable || p == Presence::conditional_null;
}
inline bool may_be_absent(Presence p) {
    return p == Presence::conditional || p == Presence::conditional_null;
}

struct RecordField {
    std::string_view path;
    FieldType type;
    std::string_view unit;  // "ns", "bytes", "count", "IP address", ...; "" for none
    Presence presence;
    std::string_view meaning;
    std::string_view when = {};  // "" (every record of the type) or "KEY=V1|V2"
};

struct RecordType {
    Producer producer;
    std::string_view type;   // the records' `type`
    std::string_view about;  // when the producer writes one, and what one stands for
    std::span<const RecordField> fields;
};

// In the order docs/records.md shows them: insert-dp's, insert-trace's, insert-correlate's.
std::span<const RecordType> record_types();

}  // namespace insert::records
