#include "dataplane/common/record_route.hpp"

#include <cstring>

namespace insert {

namespace json_scan {

std::size_t string_end(std::string_view s, std::size_t i) {
    while (i < s.size()) {
        const void* q = std::memchr(s.data() + i, '"', s.size() - i);
        if (!q) return std::string_view::npos;
        const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(q) - s.data());
        std::size_t backslashes = 0;  // an odd run before the quote escapes it
        while (at - backslashes > i && s[at - backslashes - 1] == '\\') ++backslashes;
        if (backslashes % 2 == 0) return at;
        i = at + 1;
    }
    return std::string_view::npos;
}

std::size_t value_end(std::string_view s, std::size_t i) {
    if (i >= s.size()) return std::string_view::npos;
    if (s[i] == '"') {
        const std::size_t e = string_end(s, i + 1);
        return e == std::string_view::npos ? e : e + 1;
    }
    if (s[i] == '{' || s[i] == '[') {
        unsigned depth = 0;
        while (i < s.size()) {
            const char c = s[i];
            if (c == '"') {
                const std::size_t e = string_end(s, i + 1);
                if (e == std::string_view::npos) return e;
                i = e + 1;
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if ((c == '}' || c == ']') && --depth == 0) return i + 1;
            ++i;
        }
        return std::string_view::npos;
    }
    const std::size_t start = i;  // a number or a literal
    while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' &&
           s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
        ++i;
    return i > start ? i : std::string_view::npos;
}

}  // namespace json_scan

namespace {

// The record types whose partitions depend on their addresses.
enum class Kind : uint8_t { unknown, msg, qp, event, verb };

Kind kind_of(std::string_view type) {
    if (type == "msg") return Kind::msg;
    if (type == "qp") return Kind::qp;
    if (type == "event") return Kind::event;
    if (type == "verb") return Kind::verb;
    return Kind::unknown;
}

bool is_datapath_verb(std::string_view verb) {
    return verb == "post_send" || verb == "post_recv" || verb == "poll_cq";
}

// What the rule needs from one record, gathered in the order the members come.
struct Fields {
    bool typed = false;
    Kind kind = Kind::unknown;
    std::string_view first, second;  // the addresses: requester/endpoint, responder/peer
    bool first_seen = false, second_seen = false;
    std::string_view verb, event_kind;
    bool verb_seen = false, event_kind_seen = false;

    // Everything the rule needs is known: stop reading.
    bool complete() const {
        if (!typed) return false;
        switch (kind) {
            case Kind::msg:
            case Kind::qp:
                return first_seen && second_seen;
            case Kind::event:  // only a pairing names a peer
                return first_seen && event_kind_seen && (event_kind != "pair" || second_seen);
            case Kind::verb:
                return verb_seen && (!is_datapath_verb(verb) || first_seen);
            case Kind::unknown:
                return true;
        }
        return true;
    }
};

void take(Fields& f, const JsonMember& m) {
    const std::string_view k = m.key;
    const std::string_view text = m.string ? m.value : std::string_view();
    if (k == "type") {
        f.typed = true;
        f.kind = m.string ? kind_of(m.value) : Kind::unknown;
    } else if (k == "src_ip") {  // msg: the requester
        if (f.kind == Kind::msg || !f.typed) f.first = text, f.first_seen = true;
    } else if (k == "dst_ip") {  // msg: the responder
        if (f.kind == Kind::msg || !f.typed) f.second = text, f.second_seen = true;
    } else if (k == "ip") {
        if (f.kind != Kind::msg) f.first = text, f.first_seen = true;
    } else if (k == "peer_ip") {
        if (f.kind != Kind::msg) f.second = text, f.second_seen = true;
    } else if (k == "verb") {
        f.verb = text;
        f.verb_seen = true;
    } else if (k == "kind") {
        f.event_kind = text;
        f.event_kind_seen = true;
    }
}

}  // namespace

RecordRoute route_record(std::string_view line, const HostPartitions& partitions) {
    RecordRoute route;
    Fields f;
    const bool ok = for_each_member(line, [&f](const JsonMember& m) {
        take(f, m);
        return !f.complete();
    });
    const auto add = [&route](uint32_t p) {
        if (route.count == 0 || route.partition[0] != p) route.partition[route.count++] = p;
    };
    bool own = false;  // whether the rule gives the record partitions of its own
    switch (ok ? f.kind : Kind::unknown) {
        case Kind::msg:
        case Kind::qp:
        case Kind::event:
            own = !f.first.empty();  // every wire record names its endpoint
            break;
        case Kind::verb:
            own = is_datapath_verb(f.verb) && !f.first.empty();  // ip null: not known yet
            f.second = {};
            break;
        case Kind::unknown:
            break;
    }
    if (!own) {
        route.every = true;
        return route;
    }
    add(partitions.of_ip(f.first));
    if (!f.second.empty()) add(partitions.of_ip(f.second));
    return route;
}

}  // namespace insert
