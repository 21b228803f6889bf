// One JSON Lines record -> a typed input record (records.hpp), with simdjson's on-demand
// parser: the fields are visited once, in whatever order the producer wrote them, and
// only those the join needs are converted. A line that is not a JSON object, a known
// record with a field of the wrong type or without a field the join needs, and unknown
// record types are reported as such (docs/correlation.md section 1), never thrown.
#pragma once

#include <simdjson.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "correlator/input/field_names.hpp"
#include "correlator/input/flat_object.hpp"
#include "correlator/input/host_names.hpp"
#include "correlator/input/records.hpp"

namespace insert::correlate {

enum class LineKind : uint8_t {
    wire_msg,
    wire_qp,
    host_event,
    cgroup_name,  // insert-trace's `cgroup` record: LineParser::cgroup() has it
    tick,         // insert-trace's `tick` record: LineParser::tick() has it
    ignored,      // a known record the join does not use
    blank,
    not_json,
    bad_field,
    unknown_type,
};

class LineParser {
  public:
    explicit LineParser(HostNames& hosts) : hosts_(hosts) {}

    // The last line of kind LineKind::cgroup_name.
    const CgroupName& cgroup() const { return cgroup_; }
    // The last line of kind LineKind::tick.
    const HostTick& tick() const { return tick_; }

    // `line` (without its newline) must be followed by at least SIMDJSON_PADDING readable
    // bytes: `capacity` counts them. On a bad line `reason` says what is wrong.
    LineKind parse(const char* line, std::size_t len, std::size_t capacity, WireMsg& msg,
                   WireQp& qp, HostEvent& event, std::string& reason);

    // The line at `line`, whose end is not known yet, when it is of the flat form
    // (flat_object.hpp) and a record the join uses or ignores: true, with its kind and
    // `line_end` (its newline, or `limit`). False otherwise: the caller finds the line's
    // end and calls parse(), which also words what is wrong with a bad line.
    bool parse_flat_line(const char* line, const char* limit, const char*& line_end, LineKind& kind,
                         WireMsg& msg, WireQp& qp, HostEvent& event, std::string& reason);

    // Off: every line through simdjson (the equivalence test compares the two paths).
    void use_flat_path(bool on) { flat_path_ = on; }

  private:
    LineKind parse_flat(WireMsg& msg, WireQp& qp, HostEvent& event, std::string& reason);
    // Fields: simdjson's object, or the flat path's FlatObject.
    template <class Fields>
    LineKind parse_msg(Fields& obj, WireMsg& msg, std::string& reason);
    template <class Fields>
    LineKind parse_qp(Fields& obj, WireQp& qp, std::string& reason);
    template <class Fields>
    LineKind parse_host(Fields& obj, HostKind kind, HostEvent& event, std::string& reason);
    template <class V>
    bool read_common_host_field(Field f, V& v, HostEvent& e, bool& ok);
    LineKind parse_cgroup(simdjson::ondemand::object& obj, std::string& reason);
    LineKind parse_tick(simdjson::ondemand::object& obj, std::string& reason);
    uint32_t host_id(std::string_view name);

    simdjson::ondemand::parser parser_;
    FlatObject flat_;
    bool flat_path_ = true;
    HostNames& hosts_;
    const FieldTable& fields_ = field_table();
    // The last host name and its id: a stream's records nearly always share it.
    std::string last_host_;
    CgroupName cgroup_;
    HostTick tick_;
    uint32_t last_host_id_ = UINT32_MAX;
    // An address field read like read_opt_ip, remembering the last text it parsed: a
    // stream's records nearly always repeat it (a host's own address, a QP's source and
    // destination), and inet_pton per record showed in the profile.
    struct IpCache {
        std::string text;  // empty: nothing yet (null and empty values are not cached)
        Ip ip;
        template <class V>  // simdjson's value or FlatValue
        bool read(V& v, Ip& out, bool& present);
        template <class V>
        bool read_required(V& v, Ip& out) {  // like read_ip
            bool present = false;
            return read(v, out, present) && present;
        }
    };
    IpCache host_ip_, src_ip_, dst_ip_;
};

}  // namespace insert::correlate
