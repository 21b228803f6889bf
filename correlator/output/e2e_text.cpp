// The e2e record's text (record_writer.hpp; SPEC 10 "Records"). A batch run writes one per
// joined message - a million lines of ~640 bytes on the benchmark's run - so this record is
// written with one cursor in a register into a buffer sized for its worst case, the keys as
// constant runs of text between the values, instead of through JsonLine: each of JsonLine's
// ~30 calls checked room and stored its length and state, which every char written may
// alias, so the compiler reloaded them around each copy. The other records are few.
#include <cstring>
#include <string>
#include <string_view>

#include "correlator/input/host_names.hpp"
#include "correlator/input/swar.hpp"
#include "correlator/output/record_writer.hpp"
#include "dataplane/export/decimal.hpp"
#include "hosttrace/wc_status_names.hpp"

namespace insert::correlate {

namespace {

// A literal: its size is known where it is called, so the copy is a few moves.
template <std::size_t N>
[[gnu::always_inline]] inline char* put(char* p, const char (&text)[N]) {
    std::memcpy(p, text, N - 1);
    return p + N - 1;
}

[[gnu::always_inline]] inline char* put(char* p, std::string_view text) {
    std::memcpy(p, text.data(), text.size());
    return p + text.size();
}

char* put_signed(char* p, int64_t v) {
    if (v < 0) {
        *p++ = '-';
        return decimal::write(p, ~static_cast<uint64_t>(v) + 1);
    }
    return decimal::write(p, static_cast<uint64_t>(v));
}

char* put_optional(char* p, int64_t v) {
    return v == kNone ? put(p, "null") : put_signed(p, v);
}

char* put_ip(char* p, const Ip& ip) {
    *p++ = '"';
    p += ip.format(p);
    *p++ = '"';
    return p;
}

// Text from the input (comm, host names), quoted and escaped as JSON requires; at most
// kEscapedBytes(text) bytes.
constexpr std::size_t kEscapedBytes(std::size_t n) {
    return 2 + 6 * n;
}
char* put_text(char* p, std::string_view v) {
    *p++ = '"';
    if (swar::json_plain(v)) {
        p = put(p, v);
    } else {
        static constexpr char kHex[] = "0123456789abcdef";
        for (const char c : v) {
            const auto u = static_cast<unsigned char>(c);
            if (c == '"' || c == '\\') {
                *p++ = '\\';
                *p++ = c;
            } else if (u < 0x20) {
                p = put(p, "\\u00");
                *p++ = kHex[u >> 4];
                *p++ = kHex[u & 0xF];
            } else {
                *p++ = c;
            }
        }
    }
    *p++ = '"';
    return p;
}

// Everything but the four texts from the input - ~420 bytes of keys, 2 addresses of at most
// 46 characters, 16 numbers of at most 20 digits and a sign, names from the program's own
// tables - with room to spare.
constexpr std::size_t kFixedBytes = 1536;

char* write_e2e(char* p, const E2eRow& r, std::string_view host, std::string_view peer_host) {
    const WireMsg& m = *r.msg;
    const Incarnation& q = *r.requester;
    const WorkRequest& w = *r.wr;
    p = put(p, "{\"type\":\"e2e\",\"src_ip\":");
    p = put_ip(p, q.ip);
    p = put(p, ",\"src_qpn\":");
    p = decimal::write(p, q.qpn);
    p = put(p, ",\"dst_ip\":");
    p = put_ip(p, m.dst_ip);
    p = put(p, ",\"dst_qpn\":");
    p = decimal::write(p, m.dst_qpn);
    p = put(p, ",\"op\":\"");
    p = put(p, kOpNames[static_cast<std::size_t>(m.op)]);
    p = put(p, "\",\"bytes\":");
    p = decimal::write(p, w.len);
    p = put(p, ",\"psn_first\":");
    p = decimal::write(p, m.psn_first);
    p = put(p, ",\"wr_id\":");
    p = decimal::write(p, w.wr_id);
    p = put(p, ",\"pid\":");
    p = put_signed(p, q.pid);
    p = put(p, ",\"comm\":");
    p = put_text(p, q.comm.view());
    p = put(p, ",\"cgroup\":");
    p = decimal::write(p, q.cgroup);
    if (r.responder) {
        p = put(p, ",\"peer_pid\":");
        p = put_signed(p, r.responder->pid);
        p = put(p, ",\"peer_comm\":");
        p = put_text(p, r.responder->comm.view());
    } else {
        p = put(p, ",\"peer_pid\":null,\"peer_comm\":null");
    }
    p = put(p, ",\"t_post_ns\":");
    p = put_optional(p, r.t_post);
    p = put(p, ",\"t_first_ns\":");
    p = put_signed(p, m.t_first);
    p = put(p, ",\"t_ack_ns\":");
    p = put_optional(p, m.t_ack);
    p = put(p, ",\"t_poll_ns\":");
    p = put_optional(p, r.t_poll);
    p = put(p, ",\"host_ns\":");
    p = put_optional(p, r.host_ns);
    p = put(p, ",\"net_ns\":");
    p = put_optional(p, r.net_ns);
    p = put(p, ",\"completion_ns\":");
    p = put_optional(p, r.completion_ns);
    p = put(p, ",\"total_ns\":");
    p = put_optional(p, r.total_ns);
    p = put(p, ",\"retx_pkts\":");
    p = decimal::write(p, m.retx_pkts);
    p = put(p, ",\"naks\":");
    p = decimal::write(p, m.naks);
    p = put(p, ",\"status\":\"");
    p = put(p, kStatusNames[static_cast<std::size_t>(m.status)]);
    p = put(p, r.resync ? "\",\"match\":\"resync\",\"host\":" : "\",\"match\":\"exact\",\"host\":");
    p = put_text(p, host);
    if (r.responder) {
        p = put(p, ",\"peer_host\":");
        p = put_text(p, peer_host);
        p = put(p, ",\"peer_cgroup\":");
        p = decimal::write(p, r.responder->cgroup);
    } else {
        p = put(p, ",\"peer_host\":null,\"peer_cgroup\":null");
    }
    p = put(
        p, w.signaled ? ",\"signaled\":true,\"wc_status\":" : ",\"signaled\":false,\"wc_status\":");
    if (w.t_poll != kNone) {
        *p++ = '"';
        p = put(p, hosttrace::wc_status_name(w.wc_status));
        *p++ = '"';
    } else {
        p = put(p, "null");
    }
    p = put(p, ",\"t_recv_poll_ns\":");
    p = put_optional(p, r.t_recv_poll);
    return put(p, "}\n");
}

}  // namespace

void append_e2e(std::string& out, const E2eRow& r, const HostNames& names) {
    const std::string_view host = names.view(r.requester->host);
    const std::string_view peer_host = r.responder ? names.view(r.responder->host) : "";
    const std::size_t texts = r.requester->comm.len + host.size() +
                              (r.responder ? r.responder->comm.len + peer_host.size() : 0);
    const std::size_t most = kFixedBytes + kEscapedBytes(texts);
    // On the stack for any line with host names of a few hundred bytes.
    char stack[4096];
    std::string heap;
    char* const start = most <= sizeof stack ? stack : (heap.resize(most), heap.data());
    out.append(start, static_cast<std::size_t>(write_e2e(start, r, host, peer_host) - start));
}

}  // namespace insert::correlate
