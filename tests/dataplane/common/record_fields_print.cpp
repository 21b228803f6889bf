// The field table (dataplane/common/record_fields.hpp) as text for the tests and the docs:
//   record_fields_print markdown   docs/records.md's generated part (records_doc_test.py
//                                  compares it with the committed page, and writes it with
//                                  `ninja -C build records-doc`)
//   record_fields_print json       one JSON line per field, what record_fields_check.py
//                                  checks the writers' records against
#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/common/json_line.hpp"
#include "dataplane/common/record_fields.hpp"
#include "dataplane/common/version.hpp"

namespace {

using namespace insert::records;

// Markdown table cells: a `|` would end the cell.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += '\\';
        out += c;
    }
    return out;
}

std::string may_be(Presence p) {
    if (may_be_null(p) && may_be_absent(p)) return "null, absent";
    if (may_be_null(p)) return "null";
    if (may_be_absent(p)) return "absent";
    return "";
}

// "kind=nak|rnr_nak" -> "`kind` is `nak` or `rnr_nak`".
std::string when_heading(std::string_view when) {
    const std::size_t eq = when.find('=');
    std::string out = "`";
    out += when.substr(0, eq);
    out += "` is ";
    std::string_view values = when.substr(eq + 1);
    bool first = true;
    while (!values.empty()) {
        const std::size_t bar = values.find('|');
        const bool last = bar == std::string_view::npos;
        if (!first) out += last ? " or " : ", ";
        out += "`";
        out += values.substr(0, bar);
        out += "`";
        first = false;
        values = last ? std::string_view() : values.substr(bar + 1);
    }
    return out;
}

void table(std::string& out, const RecordType& r, std::string_view when) {
    out += "| field | type | unit | may be | meaning |\n|---|---|---|---|---|\n";
    for (const RecordField& f : r.fields) {
        if (f.when != when) continue;
        // Appended piece by piece: `"literal" + std::string` trips GCC 12's -Wrestrict.
        out += "| `";
        out += f.path;
        out += "` | ";
        out += field_type_name(f.type);
        out += " | ";
        out += cell(f.unit);
        out += " | ";
        out += may_be(f.presence);
        out += " | ";
        out += cell(f.meaning);
        out += " |\n";
    }
}

std::string markdown() {
    std::string out = "Schema **";
    out += insert::kRecordSchema;
    out += "**.\n\n| record | written by | what one is |\n|---|---|---|\n";
    for (const RecordType& r : record_types()) {
        // GitHub makes the anchor of the heading below, "msg-insert-dp" for "`msg`
        // (insert-dp)".
        out += "| [`";
        out += r.type;
        out += "`](#";
        out += r.type;
        out += "-";
        out += producer_name(r.producer);
        out += ") | ";
        out += producer_name(r.producer);
        out += " | ";
        out += cell(r.about);
        out += " |\n";
    }
    for (const RecordType& r : record_types()) {
        out += "\n### `";
        out += r.type;
        out += "` (";
        out += producer_name(r.producer);
        out += ")\n\n";
        out += r.about;
        out += "\n\n";
        table(out, r, "");
        // Then the fields of some records only, in the order of their first field.
        std::vector<std::string_view> done;
        for (const RecordField& f : r.fields) {
            if (f.when.empty() || std::find(done.begin(), done.end(), f.when) != done.end())
                continue;
            done.push_back(f.when);
            out += "\nWhen ";
            out += when_heading(f.when);
            out += ":\n\n";
            table(out, r, f.when);
        }
    }
    return out;
}

std::string json() {
    std::string out;
    for (const RecordType& r : record_types())
        for (const RecordField& f : r.fields) {
            insert::JsonLine line(out);
            line.word("producer", producer_name(r.producer))
                .word("record", r.type)
                .s("when", f.when)
                .s("path", f.path)
                .word("type", field_type_name(f.type))
                .b("nullable", may_be_null(f.presence))
                .b("conditional", may_be_absent(f.presence));
            line.end();
        }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view mode = argc == 2 ? argv[1] : "";
    if (mode != "markdown" && mode != "json") {
        std::fprintf(stderr, "usage: record_fields_print markdown|json\n");
        return 2;
    }
    const std::string text = mode == "markdown" ? markdown() : json();
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}
