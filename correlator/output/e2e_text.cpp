// The e2e record's text (record_writer.hpp; SPEC 10 "Records"). A batch run writes one per
// joined message - a million lines of ~640 bytes on the benchmark's run - so this record is
// written with the JSON writer's cursor (JsonCursor) in a register into a buffer sized for
// its worst case, the keys as constant runs of text between the values, rather than through
// JsonLine: each of JsonLine's ~30 calls checked room and stored its length and state, which
// every char written may alias, so the compiler reloaded them around each copy. The other
// records are few.
#include <cstring>
#include <string>
#include <string_view>

#include "correlator/input/host_names.hpp"
#include "correlator/output/record_writer.hpp"
#include "dataplane/common/json_cursor.hpp"
#include "hosttrace/wc_status_names.hpp"

namespace insert::correlate {

namespace {

// Everything but the four texts from the input - ~420 bytes of keys, 2 addresses of at most
// 46 characters, 16 numbers of at most 20 digits and a sign, names from the program's own
// tables - with room to spare.
constexpr std::size_t kFixedBytes = 1536;

char* write_e2e(char* start, const E2eRow& r, std::string_view host, std::string_view peer_host) {
    const WireMsg& m = *r.msg;
    const Incarnation& q = *r.requester;
    const WorkRequest& w = *r.wr;
    JsonCursor c(start);
    c.lit("{\"type\":\"e2e\",\"src_ip\":");
    c.ip(q.ip);
    c.lit(",\"src_qpn\":");
    c.num(q.qpn);
    c.lit(",\"dst_ip\":");
    c.ip(m.dst_ip);
    c.lit(",\"dst_qpn\":");
    c.num(m.dst_qpn);
    c.lit(",\"op\":\"");
    c.str(kOpNames[static_cast<std::size_t>(m.op)]);
    c.lit("\",\"bytes\":");
    c.num(w.len);
    c.lit(",\"psn_first\":");
    c.num(m.psn_first);
    c.lit(",\"wr_id\":");
    c.num(w.wr_id);
    c.lit(",\"pid\":");
    c.signed_num(q.pid);
    c.lit(",\"comm\":");
    c.text(q.comm.view());
    c.lit(",\"cgroup\":");
    c.num(q.cgroup);
    if (r.responder) {
        c.lit(",\"peer_pid\":");
        c.signed_num(r.responder->pid);
        c.lit(",\"peer_comm\":");
        c.text(r.responder->comm.view());
    } else {
        c.lit(",\"peer_pid\":null,\"peer_comm\":null");
    }
    c.lit(",\"t_post_ns\":");
    c.opt(r.t_post);
    c.lit(",\"t_first_ns\":");
    c.signed_num(m.t_first);
    c.lit(",\"t_ack_ns\":");
    c.opt(m.t_ack);
    c.lit(",\"t_poll_ns\":");
    c.opt(r.t_poll);
    c.lit(",\"host_ns\":");
    c.opt(r.host_ns);
    c.lit(",\"net_ns\":");
    c.opt(r.net_ns);
    c.lit(",\"completion_ns\":");
    c.opt(r.completion_ns);
    c.lit(",\"total_ns\":");
    c.opt(r.total_ns);
    c.lit(",\"retx_pkts\":");
    c.num(m.retx_pkts);
    c.lit(",\"naks\":");
    c.num(m.naks);
    c.lit(",\"status\":\"");
    c.str(kStatusNames[static_cast<std::size_t>(m.status)]);
    if (r.resync)
        c.lit("\",\"match\":\"resync\",\"host\":");
    else
        c.lit("\",\"match\":\"exact\",\"host\":");
    c.text(host);
    if (r.responder) {
        c.lit(",\"peer_host\":");
        c.text(peer_host);
        c.lit(",\"peer_cgroup\":");
        c.num(r.responder->cgroup);
    } else {
        c.lit(",\"peer_host\":null,\"peer_cgroup\":null");
    }
    if (w.signaled)
        c.lit(",\"signaled\":true,\"wc_status\":");
    else
        c.lit(",\"signaled\":false,\"wc_status\":");
    if (w.t_poll != kNone) {
        c.lit("\"");
        c.str(hosttrace::wc_status_name(w.wc_status));
        c.lit("\"");
    } else {
        c.lit("null");
    }
    c.lit(",\"t_recv_poll_ns\":");
    c.opt(r.t_recv_poll);
    c.lit(",\"t_covered_ns\":");
    c.opt(r.t_covered);
    return c.lit("}\n").pos();
}

}  // namespace

void append_e2e(std::string& out, const E2eRow& r, const HostNames& names) {
    const std::string_view host = names.view(r.requester->host);
    const std::string_view peer_host = r.responder ? names.view(r.responder->host) : "";
    const std::size_t texts = r.requester->comm.len + host.size() +
                              (r.responder ? r.responder->comm.len + peer_host.size() : 0);
    const std::size_t most = kFixedBytes + JsonCursor::escaped_bytes(texts);
    // On the stack for any line with host names of a few hundred bytes.
    char stack[4096];
    std::string heap;
    char* const start = most <= sizeof stack ? stack : (heap.resize(most), heap.data());
    out.append(start, static_cast<std::size_t>(write_e2e(start, r, host, peer_host) - start));
}

}  // namespace insert::correlate
