// Which partitions one record goes to (SPEC 10 "Scale-out"; docs/scale-out.md "The
// partition rule"), read from the record's JSON line as the producers wrote it:
// - insert-dp's wire records to the partitions of the hosts they concern: `msg` to its
//   requester's (src_ip) and responder's (dst_ip), `qp` to its endpoint's (ip) and its
//   peer's (peer_ip, when paired), `event` to its endpoint's (ip) and, for a pairing, its
//   peer's;
// - insert-trace's data-path verbs (post_send, post_recv, poll_cq) to the partition of the
//   host address they name (ip);
// - everything else to every partition: the control plane of a host (trace_start,
//   attach, cgroup, lost, process_exit, trace_stats, and the verbs that open devices,
//   create, modify and destroy QPs, CQs, PDs and MRs - their lifetimes, which every
//   partition's joins need and which are few), insert-dp's summary, a data-path verb
//   whose address the tracer did not know yet (ip null), and any record type this code
//   does not know (a new one is never lost, at worst sent everywhere).
// Only the top level of the line is read, and only as far as the rule needs (type and one
// or two addresses: the first hundred bytes of a record).
#pragma once

#include <cstdint>
#include <string_view>

#include "dataplane/common/host_partition.hpp"

namespace insert {

struct RecordRoute {
    bool every = false;  // to every partition
    uint8_t count = 0;   // else: this many partitions, 1 or 2, distinct
    uint32_t partition[2] = {};
};

RecordRoute route_record(std::string_view line, const HostPartitions& partitions);

// One member of a JSON object's top level: its key (as written, without the quotes) and its
// value's text - a string's without its quotes and still escaped (`string` true), anything
// else as written (a number, true, false, null, a nested object or array).
struct JsonMember {
    std::string_view key;
    std::string_view value;
    bool string = false;
};

// Calls `visit(member)` for each member of the object `line` holds, in order, until it
// returns false. False when the line is not a well-formed object as far as it was read.
template <class Visit>
bool for_each_member(std::string_view line, Visit&& visit);

namespace json_scan {

inline std::size_t skip_blanks(std::string_view s, std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
    return i;
}

// `i` just past an opening quote: the position of the closing one (npos if none).
std::size_t string_end(std::string_view s, std::size_t i);
// `i` at a value's first byte: the position just past it (npos if malformed).
std::size_t value_end(std::string_view s, std::size_t i);

}  // namespace json_scan

template <class Visit>
bool for_each_member(std::string_view line, Visit&& visit) {
    using namespace json_scan;
    std::size_t i = skip_blanks(line, 0);
    if (i >= line.size() || line[i] != '{') return false;
    i = skip_blanks(line, i + 1);
    if (i < line.size() && line[i] == '}') return true;
    for (;;) {
        if (i >= line.size() || line[i] != '"') return false;
        const std::size_t key_end = string_end(line, i + 1);
        if (key_end == std::string_view::npos) return false;
        JsonMember m;
        m.key = line.substr(i + 1, key_end - i - 1);
        i = skip_blanks(line, key_end + 1);
        if (i >= line.size() || line[i] != ':') return false;
        i = skip_blanks(line, i + 1);
        const std::size_t end = value_end(line, i);
        if (end == std::string_view::npos) return false;
        m.string = line[i] == '"';
        m.value = m.string ? line.substr(i + 1, end - i - 2) : line.substr(i, end - i);
        if (!visit(m)) return true;
        i = skip_blanks(line, end);
        if (i < line.size() && line[i] == ',') {
            i = skip_blanks(line, i + 1);
            continue;
        }
        return i < line.size() && line[i] == '}';
    }
}

}  // namespace insert
