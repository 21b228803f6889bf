#include "correlator/input/line_parser.hpp"

#include <bit>
#include <charconv>
#include <cstring>

#include "correlator/input/field_names.hpp"
#include "correlator/input/flat_object.hpp"
#include "correlator/input/mac_address.hpp"
#include "correlator/input/same_text.hpp"

namespace insert::correlate {

namespace {

using simdjson::SUCCESS;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

// Field readers: false when the JSON value has another type (the caller reports the key).
// Each primitive exists for simdjson's values and for the flat path's (flat_object.hpp);
// the readers built on them are templates over both.
bool read_u64(value& v, uint64_t& out) {
    return v.get_uint64().get(out) == SUCCESS;
}
bool read_u64(FlatValue& v, uint64_t& out) {
    return flat_u64(v, out);
}

bool read_i64(value& v, int64_t& out) {
    return v.get_int64().get(out) == SUCCESS;
}
bool read_i64(FlatValue& v, int64_t& out) {
    return flat_i64(v, out);
}

bool is_null(value& v) {
    bool null = false;
    return v.is_null().get(null) == SUCCESS && null;
}
bool is_null(FlatValue& v) {
    return v.kind == 'n';
}

bool read_str(value& v, std::string_view& out) {
    return v.get_string().get(out) == SUCCESS;
}
bool read_str(FlatValue& v, std::string_view& out) {
    out = v.text();
    return v.kind == '"';
}

bool read_bool(value& v, bool& out) {
    return v.get_bool().get(out) == SUCCESS;
}
bool read_bool(FlatValue& v, bool& out) {
    out = v.kind == 't';
    return v.kind == 't' || v.kind == 'f';
}

template <class V>
bool read_u32(V& v, uint32_t& out) {
    uint64_t x;
    if (!read_u64(v, x) || x > UINT32_MAX) return false;
    out = static_cast<uint32_t>(x);
    return true;
}

// Unsigned, or null (kNone). Values above INT64_MAX (a 64-bit VA or wr_id) keep their bits.
template <class V>
bool read_opt_u64(V& v, int64_t& out) {
    if (is_null(v)) {
        out = kNone;
        return true;
    }
    uint64_t x;
    if (!read_u64(v, x)) return false;
    out = static_cast<int64_t>(x);
    return true;
}

template <class V>
bool read_opt_i64(V& v, int64_t& out) {
    if (is_null(v)) {
        out = kNone;
        return true;
    }
    return read_i64(v, out);
}

// A string or null (empty view).
template <class V>
bool read_opt_str(V& v, std::string_view& out) {
    if (is_null(v)) {
        out = {};
        return true;
    }
    return read_str(v, out);
}

// IP text or null; false for a string that is no address.
template <class V>
bool read_opt_ip(V& v, Ip& out, bool& present) {
    std::string_view text;
    if (!read_opt_str(v, text)) return false;
    present = !text.empty();
    if (!present) return true;
    const auto ip = Ip::parse(text);
    if (!ip) return false;
    out = *ip;
    return true;
}

template <class V>
bool read_ip(V& v, Ip& out) {
    bool present = false;
    return read_opt_ip(v, out, present) && present;
}

// insert-trace's pointers: "0x7f..." (hex) or null (0).
template <class V>
bool read_pointer(V& v, uint64_t& out) {
    std::string_view text;
    if (!read_opt_str(v, text)) return false;
    out = 0;
    if (text.empty()) return true;
    if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) return false;
    const auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), out, 16);
    return ec == std::errc() && end == text.data() + text.size();
}

bool parse_op(std::string_view s, Op& op) {
    for (std::size_t i = 0; i < kOpNames.size(); ++i)
        if (same_text(kOpNames[i], s)) {
            op = static_cast<Op>(i);
            return true;
        }
    return false;
}

bool parse_status(std::string_view s, MsgStatus& status) {
    for (std::size_t i = 0; i < kStatusNames.size(); ++i)
        if (same_text(kStatusNames[i], s)) {
            status = static_cast<MsgStatus>(i);
            return true;
        }
    return false;
}

PairBy parse_pair_by(std::string_view s) {
    if (s.empty()) return PairBy::none;
    for (std::size_t i = 1; i + 1 < kPairByNames.size(); ++i)
        if (same_text(kPairByNames[i], s)) return static_cast<PairBy>(i);
    return PairBy::other;
}

WrOpcode parse_wr_opcode(std::string_view s) {
    static constexpr std::pair<std::string_view, WrOpcode> kNames[] = {
        {"RDMA_WRITE", WrOpcode::rdma_write},
        {"RDMA_WRITE_WITH_IMM", WrOpcode::rdma_write_with_imm},
        {"SEND", WrOpcode::send},
        {"SEND_WITH_IMM", WrOpcode::send_with_imm},
        {"RDMA_READ", WrOpcode::rdma_read},
        {"ATOMIC_CMP_AND_SWP", WrOpcode::atomic_cmp_and_swp},
        {"ATOMIC_FETCH_AND_ADD", WrOpcode::atomic_fetch_and_add},
        {"SEND_WITH_INV", WrOpcode::send_with_inv}};
    for (const auto& [name, op] : kNames)
        if (same_text(name, s)) return op;
    return WrOpcode::other;
}

WcOpcode parse_wc_opcode(std::string_view s) {
    if (same_text(s, "RECV")) return WcOpcode::recv;
    if (same_text(s, "RECV_RDMA_WITH_IMM")) return WcOpcode::recv_rdma_with_imm;
    return WcOpcode::send_side;
}

uint32_t access_bit(std::string_view name) {
    if (name == "REMOTE_WRITE") return kAccessRemoteWrite;
    if (name == "REMOTE_READ") return kAccessRemoteRead;
    if (name == "REMOTE_ATOMIC") return kAccessRemoteAtomic;
    return 0;
}

// Flat lines have no arrays (a line with one takes the general path).
bool read_access_names(FlatValue&, uint32_t&) {
    return false;
}

bool read_access_names(value& v, uint32_t& bits) {
    simdjson::ondemand::array names;
    if (v.get_array().get(names) != SUCCESS) return false;
    bits = 0;
    for (auto element : names) {
        std::string_view name;
        if (element.get_string().get(name) != SUCCESS) return false;
        bits |= access_bit(name);
    }
    return true;
}

bool parse_host_kind(std::string_view verb, HostKind& kind) {
    static constexpr std::pair<std::string_view, HostKind> kVerbs[] = {
        {"post_send", HostKind::post_send}, {"poll_cq", HostKind::poll_cq},
        {"post_recv", HostKind::post_recv}, {"create_qp", HostKind::create_qp},
        {"modify_qp", HostKind::modify_qp}, {"destroy_qp", HostKind::destroy_qp},
        {"reg_mr", HostKind::reg_mr},       {"dereg_mr", HostKind::dereg_mr},
    };
    for (const auto& [name, k] : kVerbs)
        if (same_text(name, verb)) {
            kind = k;
            return true;
        }
    return false;
}

// A key as it stands in the line, without unescaping it into the parser's string buffer;
// null for a key with an escape, which takes the slow path. Keys end within the line, and
// the line has SIMDJSON_PADDING readable bytes after it: scanning 64 bytes for the closing
// quote stays in bounds.
std::string_view raw_key(simdjson::ondemand::field& field) {
    const char* k = field.key().raw();
    const auto* quote = static_cast<const char*>(std::memchr(k, '"', 64));
    if (!quote || std::memchr(k, '\\', static_cast<std::size_t>(quote - k))) return {};
    return {k, static_cast<std::size_t>(quote - k)};
}

// The field a key names (Field::ignored: one of the schemas' keys the correlator does not
// read; Field::unknown: any other); false when the key cannot be read. Nearly every key is matched
// where it stands (FieldTable::find_raw); only the others have their end searched for, and an
// escaped one is unescaped first.
bool field_of(simdjson::ondemand::field& field, const FieldTable& fields, Field& out) {
    out = fields.find_raw(field.key().raw());
    if (out != Field::unknown) return true;
    std::string_view key = raw_key(field);
    if (key.data()) {  // no escape: whitespace before its colon, or no name of ours
        out = fields.find(key);
        return true;
    }
    if (field.unescaped_key().get(key) != SUCCESS) return false;
    out = fields.find(key);
    return true;
}

// The record types of the inputs (docs/correlation.md section 1).
enum class RecordType : uint8_t {
    msg,
    qp,
    verb,
    process_exit,
    lost,
    cgroup,
    tick,
    ignored,
    unknown
};

RecordType record_type(std::string_view type) {
    if (same_text(type, "msg")) return RecordType::msg;
    if (same_text(type, "verb")) return RecordType::verb;
    if (same_text(type, "qp")) return RecordType::qp;
    if (type == "process_exit") return RecordType::process_exit;
    if (type == "lost") return RecordType::lost;
    if (type == "cgroup") return RecordType::cgroup;
    if (type == "tick") return RecordType::tick;
    if (type == "event" || type == "summary" || type == "trace_start" || type == "attach" ||
        type == "trace_stats")
        return RecordType::ignored;
    return RecordType::unknown;
}

LineKind bad(std::string& reason, std::string_view key, std::string_view what) {
    reason.assign(key);
    reason += ": ";
    reason += what;
    return LineKind::bad_field;
}

// Required fields of each record, as bits of a 64-bit mask indexed by Field.
constexpr uint64_t bit(Field f) {
    return uint64_t{1} << static_cast<unsigned>(f);
}
static_assert(static_cast<unsigned>(Field::count) <= 64);

LineKind missing(std::string& reason, uint64_t seen, uint64_t required,
                 std::initializer_list<std::pair<Field, std::string_view>> names) {
    for (const auto& [f, name] : names)
        if ((required & bit(f)) && !(seen & bit(f))) {
            reason = std::string(name) + ": missing";
            return LineKind::bad_field;
        }
    reason = "a required field is missing";
    return LineKind::bad_field;
}

}  // namespace

uint32_t LineParser::host_id(std::string_view name) {
    if (last_host_id_ != UINT32_MAX && same_text(name, last_host_)) return last_host_id_;
    last_host_.assign(name);
    last_host_id_ = hosts_.intern(name);
    return last_host_id_;
}

template <class V>
bool LineParser::IpCache::read(V& v, Ip& out, bool& present) {
    std::string_view value_text;
    if (!read_opt_str(v, value_text)) return false;
    present = !value_text.empty();
    if (!present) return true;
    if (!same_text(value_text, text)) {
        const auto parsed = Ip::parse(value_text);
        if (!parsed) return false;
        text.assign(value_text);
        ip = *parsed;
    }
    out = ip;
    return true;
}

// {"type":"cgroup","id":N,"path":"/a/b"|null,"host":H,...} (docs/insert-trace.md).
LineKind LineParser::parse_cgroup(simdjson::ondemand::object& obj, std::string& reason) {
    cgroup_ = CgroupName{};
    bool has_id = false, has_host = false;
    for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key) != SUCCESS) return LineKind::not_json;
        simdjson::ondemand::value v;
        if (field.value().get(v) != SUCCESS) return LineKind::not_json;
        std::string_view text;
        if (key == "id") {
            if (v.get_uint64().get(cgroup_.id) != SUCCESS) return bad(reason, "id", "not a number");
            has_id = true;
        } else if (key == "path") {
            const bool null = is_null(v);
            if (!null && !read_str(v, text)) return bad(reason, "path", "not a string");
            cgroup_.has_path = !null;
            cgroup_.path.assign(text);
        } else if (key == "host") {
            if (!read_str(v, text)) return bad(reason, "host", "not a string");
            cgroup_.host = host_id(text);
            has_host = true;
        }
    }
    if (!has_id) return bad(reason, "id", "missing");
    if (!has_host) return bad(reason, "host", "missing");
    return LineKind::cgroup_name;
}

// {"type":"tick","t_ns":N,"wall_ns":N,"host":H} (docs/insert-trace.md).
LineKind LineParser::parse_tick(simdjson::ondemand::object& obj, std::string& reason) {
    tick_ = HostTick{};
    bool has_wall = false, has_host = false;
    for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key) != SUCCESS) return LineKind::not_json;
        simdjson::ondemand::value v;
        if (field.value().get(v) != SUCCESS) return LineKind::not_json;
        if (key == "wall_ns") {
            if (!read_i64(v, tick_.wall)) return bad(reason, "wall_ns", "not a number");
            has_wall = true;
        } else if (key == "host") {
            std::string_view text;
            if (!read_str(v, text)) return bad(reason, "host", "not a string");
            tick_.host = host_id(text);
            has_host = true;
        }
    }
    if (!has_wall) return bad(reason, "wall_ns", "missing");
    if (!has_host) return bad(reason, "host", "missing");
    return LineKind::tick;
}

bool LineParser::parse_flat_line(const char* line, const char* limit, const char*& line_end,
                                 LineKind& kind, WireMsg& msg, WireQp& qp, HostEvent& event,
                                 std::string& reason) {
    if (!flat_path_) return false;
    const char* const end = flat_.scan_line(line, limit, fields_);
    if (!end) return false;
    kind = parse_flat(msg, qp, event, reason);
    if (kind == LineKind::bad_field || kind == LineKind::not_json) return false;
    line_end = end;
    return true;
}

LineKind LineParser::parse(const char* line, std::size_t len, std::size_t capacity, WireMsg& msg,
                           WireQp& qp, HostEvent& event, std::string& reason) {
    std::size_t first = 0;
    while (first < len && (line[first] == ' ' || line[first] == '\t' || line[first] == '\r'))
        ++first;
    if (first == len) return LineKind::blank;
    // simdjson's on-demand parser reads only what it is asked for: a record line must end
    // with its object's closing brace, so that text after it is not silently accepted.
    std::size_t last = len;
    while (last > first &&
           (line[last - 1] == ' ' || line[last - 1] == '\t' || line[last - 1] == '\r'))
        --last;
    if (line[first] != '{' || line[last - 1] != '}') {
        reason = "not a JSON object";
        return LineKind::not_json;
    }
    if (flat_path_ && flat_.scan(line + first, last - first, fields_)) {
        const LineKind kind = parse_flat(msg, qp, event, reason);
        if (kind != LineKind::bad_field && kind != LineKind::not_json) return kind;
        // A record the join cannot use: the general path below decides, and words, why.
    }
    simdjson::ondemand::document doc;
    if (parser_.iterate(line, len, capacity).get(doc) != SUCCESS) {
        reason = "not JSON";
        return LineKind::not_json;
    }
    object obj;
    if (doc.get_object().get(obj) != SUCCESS) {
        reason = "not a JSON object";
        return LineKind::not_json;
    }
    std::string_view type;
    {
        value v;
        const auto error = obj.find_field_unordered("type").get(v);
        if (error == simdjson::NO_SUCH_FIELD) {
            reason = "no \"type\"";
            return LineKind::unknown_type;
        }
        if (error != SUCCESS) {
            reason = "not JSON";
            return LineKind::not_json;
        }
        if (!read_str(v, type)) return bad(reason, "type", "not a string");
    }
    // The view points into the parser's string buffer, which later strings do not reuse.
    const RecordType record = record_type(type);
    if (record == RecordType::ignored) return LineKind::ignored;
    if (record == RecordType::unknown) {
        reason = "unknown record type \"" + std::string(type) + "\"";
        return LineKind::unknown_type;
    }
    if (obj.reset().error() != SUCCESS) return LineKind::not_json;
    switch (record) {
        case RecordType::msg:
            return parse_msg(obj, msg, reason);
        case RecordType::qp:
            return parse_qp(obj, qp, reason);
        case RecordType::process_exit:
            return parse_host(obj, HostKind::process_exit, event, reason);
        case RecordType::lost:
            return parse_host(obj, HostKind::lost, event, reason);
        case RecordType::cgroup:
            return parse_cgroup(obj, reason);
        case RecordType::tick:
            return parse_tick(obj, reason);
        default:
            break;
    }
    value v;
    std::string_view verb;
    const auto error = obj.find_field_unordered("verb").get(v);
    if (error == simdjson::NO_SUCH_FIELD) return bad(reason, "verb", "missing");
    if (error != SUCCESS) return LineKind::not_json;
    if (!read_str(v, verb)) return bad(reason, "verb", "not a string");
    HostKind host_kind;
    if (!parse_host_kind(verb, host_kind)) return LineKind::ignored;
    if (obj.reset().error() != SUCCESS) return LineKind::not_json;
    return parse_host(obj, host_kind, event, reason);
}

// The same dispatch over a flat line (flat_ holds its fields); bad_field or not_json for
// anything the general path must decide or word.
LineKind LineParser::parse_flat(WireMsg& msg, WireQp& qp, HostEvent& event, std::string& reason) {
    const FlatValue* type = flat_.first(Field::type);
    if (!type || type->kind != '"') return LineKind::not_json;
    switch (record_type(type->text())) {
        case RecordType::msg:
            return parse_msg(flat_, msg, reason);
        case RecordType::qp:
            return parse_qp(flat_, qp, reason);
        case RecordType::process_exit:
            return parse_host(flat_, HostKind::process_exit, event, reason);
        case RecordType::lost:
            return parse_host(flat_, HostKind::lost, event, reason);
        case RecordType::ignored:
            return LineKind::ignored;
        case RecordType::cgroup:  // rare: the general path reads them
        case RecordType::tick:
        case RecordType::unknown:
            return LineKind::not_json;
        case RecordType::verb:
            break;
    }
    const FlatValue* verb = flat_.first(Field::verb);
    if (!verb || verb->kind != '"') return LineKind::not_json;
    HostKind host_kind;
    if (!parse_host_kind(verb->text(), host_kind)) return LineKind::ignored;
    return parse_host(flat_, host_kind, event, reason);
}

namespace {

// How a walk over a record's fields ended: every field read, the line not JSON after all
// (the on-demand parser finds that out as it goes), or a field of the wrong type or value.
struct Walked {
    enum class End : uint8_t { read, not_json, bad_field } end = End::read;
    Field field = Field::unknown;
};

// Visits the fields the correlator reads, in line order: `body(field, value)` returns false
// to stop at a field of the wrong type or value. `seen` collects the fields visited.
template <class Body>
Walked walk_fields(object& obj, const FieldTable& fields, uint64_t& seen, Body&& body) {
    for (auto field_result : obj) {
        simdjson::ondemand::field field;
        if (std::move(field_result).get(field) != SUCCESS) return {Walked::End::not_json};
        Field f;
        if (!field_of(field, fields, f)) return {Walked::End::not_json};
        if (f == Field::unknown || f == Field::ignored) continue;
        value v = field.value();
        seen |= bit(f);
        if (!body(f, v)) return {Walked::End::bad_field, f};
    }
    return {};
}

template <class Body>
Walked walk_fields(const FlatObject& obj, const FieldTable&, uint64_t& seen, Body&& body) {
    for (const FlatValue& item : obj) {
        FlatValue v = item;
        seen |= bit(item.field);
        if (!body(item.field, v)) return {Walked::End::bad_field, item.field};
    }
    return {};
}

LineKind walk_failed(const Walked& w, const FieldTable& fields, std::string& reason) {
    if (w.end == Walked::End::not_json) {
        reason = "not JSON";
        return LineKind::not_json;
    }
    return bad(reason, fields.name(w.field), "wrong type or value");
}

}  // namespace

// Walks the fields of `obj` with `body`, returning from the caller when the walk failed.
#define INSERT_WALK_FIELDS(obj, seen, ...)                                   \
    if (const Walked walked_ = walk_fields(obj, fields_, seen, __VA_ARGS__); \
        walked_.end != Walked::End::read)                                    \
        return walk_failed(walked_, fields_, reason);

template <class Fields>
LineKind LineParser::parse_msg(Fields& obj, WireMsg& m, std::string& reason) {
    static WireMsg blank{};  // copied rather than built (as in parse_host)
    m = blank;
    uint64_t seen = 0;
    std::string_view text;
    INSERT_WALK_FIELDS(obj, seen, [&](Field f_, auto& v_) {
        switch (f_) {
            case Field::src_ip:
                return src_ip_.read_required(v_, m.src_ip);
            case Field::dst_ip:
                return dst_ip_.read_required(v_, m.dst_ip);
            case Field::dst_qpn:
                return read_u32(v_, m.dst_qpn);
            case Field::src_qpn:
                return read_opt_u64(v_, m.src_qpn);
            case Field::op:
                return read_str(v_, text) && parse_op(text, m.op);
            case Field::imm:
                return read_opt_u64(v_, m.imm);
            case Field::psn_first:
                return read_u32(v_, m.psn_first);
            case Field::psn_last:
                return read_u32(v_, m.psn_last);
            case Field::pkts:
                return read_u32(v_, m.pkts);
            case Field::bytes:
                return read_u64(v_, m.bytes);
            case Field::va:
                return read_opt_u64(v_, m.va);
            case Field::rkey:
                return read_opt_u64(v_, m.rkey);
            case Field::dma_len:
                return read_opt_u64(v_, m.dma_len);
            case Field::t_first_ns:
                return read_i64(v_, m.t_first);
            case Field::t_last_ns:
                return read_i64(v_, m.t_last);
            case Field::t_ack_ns:
                return read_opt_i64(v_, m.t_ack);
            case Field::retx_pkts:
                return read_u32(v_, m.retx_pkts);
            case Field::naks:
                return read_u32(v_, m.naks);
            case Field::rnr_naks:
                return read_u32(v_, m.rnr_naks);
            case Field::status:
                return read_str(v_, text) && parse_status(text, m.status);
            case Field::src_mac:
                return read_str(v_, text) && parse_mac(text, m.origin.mac);
            case Field::ttl: {
                uint32_t ttl;
                if (!read_u32(v_, ttl) || ttl > 255) return false;
                m.origin.ttl = static_cast<uint8_t>(ttl);
                return true;
            }
            case Field::port: {
                int64_t port;
                if (!read_opt_u64(v_, port) || port >= kNoOriginPort) return false;
                m.origin.port = port == kNone ? kNoOriginPort : static_cast<uint16_t>(port);
                return true;
            }
            default:
                return true;
        }
    });
    // Both or neither: a record of an older insert-dp has no origin.
    m.origin.known = (seen & bit(Field::src_mac)) && (seen & bit(Field::ttl));
    constexpr uint64_t kRequired = bit(Field::src_ip) | bit(Field::dst_ip) | bit(Field::dst_qpn) |
                                   bit(Field::op) | bit(Field::psn_first) | bit(Field::bytes) |
                                   bit(Field::t_first_ns) | bit(Field::status);
    if ((seen & kRequired) != kRequired)
        return missing(reason, seen, kRequired,
                       {{Field::src_ip, "src_ip"},
                        {Field::dst_ip, "dst_ip"},
                        {Field::dst_qpn, "dst_qpn"},
                        {Field::op, "op"},
                        {Field::psn_first, "psn_first"},
                        {Field::bytes, "bytes"},
                        {Field::t_first_ns, "t_first_ns"},
                        {Field::status, "status"}});
    if (!(seen & bit(Field::psn_last))) m.psn_last = m.psn_first;
    if (!(seen & bit(Field::t_last_ns))) m.t_last = m.t_first;
    return LineKind::wire_msg;
}

template <class Fields>
LineKind LineParser::parse_qp(Fields& obj, WireQp& q, std::string& reason) {
    q = WireQp{};
    uint64_t seen = 0;
    std::string_view text;
    int64_t t_first = kNone, t_last = kNone;
    INSERT_WALK_FIELDS(obj, seen, [&](Field f_, auto& v_) {
        switch (f_) {
            case Field::ip:
                return read_ip(v_, q.ip);
            case Field::qpn:
                return read_u32(v_, q.qpn);
            case Field::peer_ip:
                return read_opt_ip(v_, q.peer_ip, q.has_peer_ip);
            case Field::peer_qpn:
                return read_opt_u64(v_, q.peer_qpn);
            case Field::pair_by:
                if (!read_opt_str(v_, text)) return false;
                q.pair_by = parse_pair_by(text);
                return true;
            case Field::pkts:
                return read_u64(v_, q.pkts);
            case Field::cnps:
                return read_u64(v_, q.cnps);
            case Field::ecn_ce:
                return read_u64(v_, q.ecn_ce);
            case Field::t_first_ns:
                return read_opt_i64(v_, t_first);
            case Field::t_last_ns:
                return read_opt_i64(v_, t_last);
            case Field::final:
                return read_bool(v_, q.final);
            default:
                return true;
        }
    });
    constexpr uint64_t kRequired = bit(Field::ip) | bit(Field::qpn) | bit(Field::t_first_ns);
    if ((seen & kRequired) != kRequired || t_first == kNone)
        return missing(reason, seen | (t_first == kNone ? 0 : bit(Field::t_first_ns)), kRequired,
                       {{Field::ip, "ip"}, {Field::qpn, "qpn"}, {Field::t_first_ns, "t_first_ns"}});
    q.t_first = t_first;
    q.t_last = t_last == kNone ? t_first : t_last;
    return LineKind::wire_qp;
}

namespace {

// The fields of a host record that depend on its kind (docs/insert-trace.md), one reader
// per kind: each reads `f` into its part of the record when it is one of its fields, and
// skips any other field (true). False: a field of the wrong type or value.
template <class V>
[[gnu::always_inline]] inline bool read_create_qp_field(Field f, V& v, auto& create) {
    std::string_view text;
    if (f == Field::qp_type) {
        if (!read_opt_str(v, text)) return false;
        create.uc = same_text(text, "UC");
        create.rc_family = create.uc || same_text(text, "RC") || same_text(text, "XRC_SEND");
    } else if (f == Field::pd) {
        return read_pointer(v, create.pd);
    }
    return true;
}

template <class V>
[[gnu::always_inline]] inline bool read_modify_qp_field(Field f, V& v, auto& mod) {
    std::string_view text;
    switch (f) {
        case Field::state:
            if (!read_opt_str(v, text)) return false;
            mod.state = same_text(text, "RTR")   ? QpState::rtr
                        : same_text(text, "RTS") ? QpState::rts
                                                 : QpState::other;
            return true;
        case Field::dest_qpn:
            mod.has_dest_qpn = true;
            return read_u32(v, mod.dest_qpn);
        case Field::sq_psn:
            mod.has_sq_psn = true;
            return read_u32(v, mod.sq_psn);
        case Field::rq_psn:
            mod.has_rq_psn = true;
            return read_u32(v, mod.rq_psn);
        case Field::peer_ip: {
            bool has_peer = false;
            if (!read_opt_ip(v, mod.peer_ip, has_peer)) return false;
            mod.has_peer_ip = has_peer;
            return true;
        }
        case Field::qp_access:
            mod.has_access = true;
            return read_access_names(v, mod.access);
        default:
            return true;
    }
}

template <class V>
[[gnu::always_inline]] inline bool read_mr_field(Field f, V& v, auto& mr) {
    switch (f) {
        case Field::pd:
            return read_pointer(v, mr.pd);
        case Field::addr:
            return read_u64(v, mr.addr);
        case Field::length:
            return read_u64(v, mr.length);
        case Field::access:
            return read_u32(v, mr.access);
        case Field::rkey:
            return read_opt_u64(v, mr.rkey);
        case Field::iova:
            return read_opt_u64(v, mr.iova);
        default:
            return true;
    }
}

template <class V>
[[gnu::always_inline]] inline bool read_post_field(Field f, V& v, auto& post) {
    std::string_view text;
    switch (f) {
        case Field::wr_id:
            return read_u64(v, post.wr_id);
        case Field::opcode:
            if (!read_str(v, text)) return false;
            post.opcode = parse_wr_opcode(text);
            return true;
        case Field::signaled:
            return read_bool(v, post.signaled);
        case Field::len:
            return read_u64(v, post.len);
        case Field::remote_addr:
            return read_opt_u64(v, post.remote_addr);
        case Field::rkey:
            return read_opt_u64(v, post.rkey);
        case Field::chain_index:
            return read_u32(v, post.chain_index);
        default:
            return true;
    }
}

template <class V>
[[gnu::always_inline]] inline bool read_poll_field(Field f, V& v, auto& poll) {
    std::string_view text;
    switch (f) {
        case Field::wr_id:
            return read_u64(v, poll.wr_id);
        case Field::status_code: {
            uint32_t code;
            if (!read_u32(v, code)) return false;
            poll.status_code = static_cast<uint16_t>(code);
            return true;
        }
        case Field::opcode:
            if (!read_str(v, text)) return false;
            poll.opcode = parse_wc_opcode(text);
            return true;
        case Field::byte_len:
            return read_u32(v, poll.byte_len);
        default:
            return true;
    }
}

// The fields a host record of `kind` must have (docs/insert-trace.md).
constexpr uint64_t required_host_fields(HostKind kind) {
    constexpr uint64_t every = bit(Field::wall_ns) | bit(Field::pid);
    switch (kind) {
        case HostKind::create_qp:
        case HostKind::modify_qp:
        case HostKind::destroy_qp:
            return every | bit(Field::qp) | bit(Field::qpn);
        case HostKind::reg_mr:
        case HostKind::dereg_mr:
            return every | bit(Field::mr);
        case HostKind::post_send:
            return every | bit(Field::qp) | bit(Field::qpn) | bit(Field::wr_id) |
                   bit(Field::opcode) | bit(Field::len);
        case HostKind::post_recv:
            return every | bit(Field::qp) | bit(Field::qpn) | bit(Field::wr_id);
        case HostKind::poll_cq:
            return every | bit(Field::qpn) | bit(Field::wr_id) | bit(Field::status_code) |
                   bit(Field::opcode);
        case HostKind::lost:
            return bit(Field::wall_ns);
        case HostKind::process_exit:
            return every;
    }
    return every;
}

}  // namespace

// The fields every host record has (who, where, when, which object); false when `f` is
// not one of them, else `ok` says whether it was read.
template <class V>
[[gnu::always_inline]] inline bool LineParser::read_common_host_field(Field f, V& v, HostEvent& e,
                                                                      bool& ok) {
    std::string_view text;
    int64_t x;
    switch (f) {
        case Field::host:
            if ((ok = read_str(v, text))) e.host = host_id(text);
            return true;
        case Field::pid:
            if ((ok = read_i64(v, x))) e.pid = static_cast<int32_t>(x);
            return true;
        case Field::tid:
            if ((ok = read_i64(v, x))) e.tid = static_cast<int32_t>(x);
            return true;
        case Field::comm:
            ok = read_str(v, text);
            if (ok) {
                e.comm.len = static_cast<uint8_t>(std::min(text.size(), e.comm.chars.size()));
                std::copy_n(text.data(), e.comm.len, e.comm.chars.data());
            }
            return true;
        case Field::cgroup:
            if ((ok = read_opt_u64(v, x))) e.cgroup = x == kNone ? 0 : static_cast<uint64_t>(x);
            return true;
        case Field::ip:
            ok = host_ip_.read(v, e.ip, e.has_ip);
            return true;
        case Field::wall_ns:
            ok = read_i64(v, e.wall);
            return true;
        case Field::qp:
        case Field::mr:
            ok = read_pointer(v, e.obj);
            return true;
        case Field::qpn:
            if ((ok = read_opt_u64(v, x))) e.qpn = x == kNone ? 0 : static_cast<uint32_t>(x);
            return true;
        case Field::ret:
            if ((ok = read_i64(v, x))) e.ret = static_cast<int32_t>(x);
            return true;
        default:
            return false;
    }
}

template <class Fields>
LineKind LineParser::parse_host(Fields& obj, HostKind kind, HostEvent& e, std::string& reason) {
    // Copied from a blank record: `e = HostEvent{}` zeroed the 128 bytes with `rep stos`,
    // whose start-up cost was a seventh of this function. Not const, or the compiler sees
    // the zeros and writes `rep stos` again; nothing writes to it.
    static HostEvent blank{};
    e = blank;
    e.kind = kind;
    uint64_t seen = 0;
    if (kind == HostKind::reg_mr || kind == HostKind::dereg_mr) e.u.mr.rkey = e.u.mr.iova = kNone;
    if (kind == HostKind::post_send) e.u.post.remote_addr = e.u.post.rkey = kNone;
    INSERT_WALK_FIELDS(obj, seen, [&](Field f_, auto& v_) {
        if (bool ok; read_common_host_field(f_, v_, e, ok)) return ok;
        switch (kind) {
            case HostKind::create_qp:
                return read_create_qp_field(f_, v_, e.u.create);
            case HostKind::modify_qp:
                return read_modify_qp_field(f_, v_, e.u.modify);
            case HostKind::reg_mr:
            case HostKind::dereg_mr:
                return read_mr_field(f_, v_, e.u.mr);
            case HostKind::post_send:
            case HostKind::post_recv:
                return read_post_field(f_, v_, e.u.post);
            case HostKind::poll_cq:
                return read_poll_field(f_, v_, e.u.poll);
            case HostKind::lost:
                return f_ != Field::ringbuf_drops || read_u64(v_, e.u.lost.drops);
            default:
                return true;
        }
    });
    const uint64_t required = required_host_fields(kind);
    if ((seen & required) != required)
        return missing(reason, seen, required,
                       {{Field::wall_ns, "wall_ns"},
                        {Field::pid, "pid"},
                        {Field::qp, "qp"},
                        {Field::qpn, "qpn"},
                        {Field::mr, "mr"},
                        {Field::wr_id, "wr_id"},
                        {Field::opcode, "opcode"},
                        {Field::len, "len"},
                        {Field::status_code, "status_code"}});
    // Signaled defaults to true for records that do not say (every WR of insert-trace has it).
    if (kind == HostKind::post_send && !(seen & bit(Field::signaled))) e.u.post.signaled = true;
    if (!(seen & bit(Field::host))) e.host = host_id("");
    return LineKind::host_event;
}

#undef INSERT_WALK_FIELDS

}  // namespace insert::correlate
