// One JSON Lines record -> a typed input record (records.hpp), with simdjson's on-demand
// parser: the fields are visited once, in whatever order the producer wrote them, and
// only those the join needs are converted. A line that is not a JSON object, a known
// record with a field of the wrong type or without a field the join needs, and unknown
// record types are reported as such (docs/correlation.md section 1), never thrown.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "correlator/input/field_names.hpp"
#include "correlator/input/records.hpp"

namespace insert::correlate {

// Host names -> small ids, shared by the parsing threads. Ids follow first appearance,
// which depends on thread timing: everything that orders by host compares names.
class HostNames {
  public:
    uint32_t intern(std::string_view name);
    std::string name(uint32_t id) const;
    // The same without a copy (every e2e record names its hosts): valid while this lives,
    // as names never move once interned.
    std::string_view view(uint32_t id) const;
    std::size_t size() const;

  private:
    mutable std::mutex mutex_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::deque<std::string> names_;  // a deque: interning more never moves the others
};

enum class LineKind : uint8_t {
    wire_msg,
    wire_qp,
    host_event,
    ignored,  // a known record the join does not use
    blank,
    not_json,
    bad_field,
    unknown_type,
};

class LineParser {
  public:
    explicit LineParser(HostNames& hosts) : hosts_(hosts) {}

    // `line` (without its newline) must be followed by at least SIMDJSON_PADDING readable
    // bytes: `capacity` counts them. On a bad line `reason` says what is wrong.
    LineKind parse(const char* line, std::size_t len, std::size_t capacity, WireMsg& msg,
                   WireQp& qp, HostEvent& event, std::string& reason);

  private:
    LineKind parse_msg(simdjson::ondemand::object& obj, WireMsg& msg, std::string& reason);
    LineKind parse_qp(simdjson::ondemand::object& obj, WireQp& qp, std::string& reason);
    LineKind parse_host(simdjson::ondemand::object& obj, HostKind kind, HostEvent& event,
                        std::string& reason);
    uint32_t host_id(std::string_view name);
    // A host record's `ip`, like read_opt_ip, remembering the last text it parsed: a
    // stream's records nearly always repeat it.
    bool host_ip(simdjson::ondemand::value& v, Ip& out, bool& present);

    simdjson::ondemand::parser parser_;
    HostNames& hosts_;
    const FieldTable& fields_ = field_table();
    // The last host name and its id: a stream's records nearly always share it.
    std::string last_host_;
    uint32_t last_host_id_ = UINT32_MAX;
    std::string last_ip_text_;  // empty: none yet (an empty or null ip is not cached)
    Ip last_ip_;
};

}  // namespace insert::correlate
