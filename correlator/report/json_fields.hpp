// Field access on a parsed record (simdjson DOM) with absent, null or mistyped values as
// "none": the report shows what a record has and never stops at what it lacks.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dataplane/common/qpn_text.hpp"

namespace insert::correlate::report {

inline std::optional<std::string_view> text_field(simdjson::dom::element e, const char* key) {
    std::string_view v;
    if (e[key].get(v) == simdjson::SUCCESS) return v;
    return std::nullopt;
}

inline std::optional<int64_t> int_field(simdjson::dom::element e, const char* key) {
    simdjson::dom::element v;
    if (e[key].get(v) != simdjson::SUCCESS) return std::nullopt;
    int64_t i = 0;
    if (v.get(i) == simdjson::SUCCESS) return i;
    uint64_t u = 0;
    if (v.get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
    return std::nullopt;
}

inline std::optional<uint64_t> uint_field(simdjson::dom::element e, const char* key) {
    uint64_t u = 0;
    if (e[key].get(u) == simdjson::SUCCESS) return u;
    return std::nullopt;
}

// An object's `qpn` as people read it (hex), "-" when it has none.
inline std::string qpn_field_text(simdjson::dom::element e) {
    const std::optional<uint64_t> qpn = uint_field(e, "qpn");
    return qpn ? qpn_text(*qpn) : std::string("-");
}

// Any value as text for a table cell: strings as they are, null as "-", numbers and
// booleans as JSON writes them, objects and arrays as compact JSON.
inline std::string cell_text(simdjson::dom::element v) {
    std::string_view s;
    if (v.get(s) == simdjson::SUCCESS) return std::string(s);
    if (v.is_null()) return "-";
    return simdjson::to_string(v);
}

// b - a in units of `unit` ns, without overflow whatever the records say.
inline double ns_between(int64_t a, int64_t b, double unit) {
    return static_cast<double>(static_cast<__int128>(b) - a) / unit;
}

inline std::string field_text(simdjson::dom::element e, const char* key) {
    simdjson::dom::element v;
    if (e[key].get(v) != simdjson::SUCCESS) return "-";
    return cell_text(v);
}

}  // namespace insert::correlate::report
