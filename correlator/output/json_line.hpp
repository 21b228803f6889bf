// Builds one JSON Lines record into a string: keys in the order written, integers through
// the digit-pair writer the dataplane's exporter uses (dataplane/export/decimal.hpp), null
// for absent values (kNone). Strings are escaped (comm and host names are the only text
// an input controls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "correlator/input/records.hpp"

namespace insert::correlate {

class JsonLine {
  public:
    explicit JsonLine(std::string& out) : out_(out) { out_ += '{'; }
    // Closes the object and the line.
    void end() { out_ += "}\n"; }

    JsonLine& key(std::string_view k);
    JsonLine& u(std::string_view k, uint64_t v);
    JsonLine& i(std::string_view k, int64_t v);
    JsonLine& opt(std::string_view k, int64_t v);    // kNone -> null
    JsonLine& opt_u(std::string_view k, int64_t v);  // an unsigned value (VA, rkey) or kNone
    JsonLine& b(std::string_view k, bool v);
    JsonLine& null(std::string_view k);
    JsonLine& s(std::string_view k, std::string_view v);
    JsonLine& ip(std::string_view k, const Ip& v);
    // A nested object or array written by the caller: `raw` is inserted as is.
    JsonLine& raw(std::string_view k, std::string_view raw);

    void append_u(uint64_t v);
    void append_i(int64_t v);
    void append_string(std::string_view v);

  private:
    // Out of line: GCC 12 inlines std::string appends into a false -Wrestrict warning.
    void append(std::string_view text);

    std::string& out_;
    bool first_ = true;
};

}  // namespace insert::correlate
