#include "bench/gen/host_trace_json.hpp"

#include <array>
#include <set>
#include <vector>

#include "bench/gen/jsonl_file.hpp"
#include "bench/gen/simulator.hpp"
#include "dataplane/common/version.hpp"

namespace insert::gen {

namespace {

// ibv_qp_attr_mask bits of the three transitions (verbs.h), as perftest sets them.
constexpr uint32_t kMaskInit = 1 | 8 | 16 | 32;  // STATE ACCESS_FLAGS PKEY_INDEX PORT
constexpr uint32_t kMaskRtrUc = 1 | 128 | 256 | (1 << 12) | (1 << 20);  // + AV MTU RQ_PSN DEST_QPN
constexpr uint32_t kMaskRtrRc = kMaskRtrUc | (1 << 15) | (1 << 17);     // + MIN_RNR MAX_DEST_RD
constexpr uint32_t kMaskRtsUc = 1 | (1 << 16);                          // STATE SQ_PSN
constexpr uint32_t kMaskRtsRc = kMaskRtsUc | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 13);

JsonCursor& hex(JsonCursor& c, uint64_t v) {
    char buf[24];
    char* e = buf + sizeof buf;
    char* p = e;
    *--p = '"';
    do {
        *--p = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    *--p = 'x';
    *--p = '0';
    *--p = '"';
    return c.str({p, static_cast<std::size_t>(e - p)});
}

JsonCursor& access_names(JsonCursor& c, uint32_t access) {
    c.lit("[");
    bool first = true;
    auto name = [&](uint32_t bit, std::string_view n) {
        if (!(access & bit)) return;
        if (!first) c.lit(",");
        first = false;
        c.lit("\"").str(n).lit("\"");
    };
    name(kAccessLocalWrite, "LOCAL_WRITE");
    name(kAccessRemoteWrite, "REMOTE_WRITE");
    name(kAccessRemoteRead, "REMOTE_READ");
    name(kAccessRemoteAtomic, "REMOTE_ATOMIC");
    return c.lit("]");
}

class Writer {
  public:
    Writer(const Scenario& sc, const HostTrace& trace, JsonOut& out)
        : sc_(sc), trace_(trace), out_(out) {
        for (std::size_t h = 0; h < sc.hosts.size(); ++h) {
            const std::string ip = sc.hosts[h].ip.to_string();
            ip_.emplace_back(ip);
            gid_.emplace_back(sc.hosts[h].ip.is_v4() ? "::ffff:" + ip : ip);
            name_.emplace_back(trace_host_name(h));
        }
        for (const char* n : HostLayout::kProcessNames) comm_.emplace_back(n);
    }

    void write(const HostRecord& r) {
        const TraceHost& th = trace_.hosts()[r.host];
        const int64_t t_ns = r.wall_ns - th.wall_offset_ns;
        if (is_verb(r.kind) && named_.emplace(r.host, trace_.cgroup(r.proc)).second) {
            // As insert-trace does: the cgroup's path before its first verb record.
            JsonCursor c = out_.reserve();
            c.lit("{\"type\":\"cgroup\"").field("t_ns", static_cast<uint64_t>(t_ns));
            c.field("wall_ns", static_cast<uint64_t>(r.wall_ns)).field("id", trace_.cgroup(r.proc));
            c.key("path").lit("\"").str(trace_.cgroup_path(r.proc)).lit("\"");
            c.key("host").padded(name_[r.host]).lit("}\n");
            out_.commit(c);
        }
        JsonCursor c = out_.reserve();
        switch (r.kind) {
            case HostRec::trace_start:
                // As insert-trace writes it, the records' schema first (docs/records.md).
                c.lit("{\"type\":\"trace_start\"").field_str("schema", kRecordSchema);
                c.field("t_ns", static_cast<uint64_t>(t_ns));
                c.key("wall_offset_ns").num(static_cast<uint64_t>(th.wall_offset_ns));
                c.key("datapath").lit(th.datapath ? "\"all\"" : "\"off\"");
                c.lit(",\"sites\":\"auto\",\"ringbuf_bytes\":4194304,\"pid\":null,\"comm\":null");
                c.lit(",\"cgroup\":null").field("probes", th.datapath ? 19 : 16);
                break;
            case HostRec::lost:
                c.lit("{\"type\":\"lost\"").field("t_ns", static_cast<uint64_t>(t_ns));
                c.field("wall_ns", static_cast<uint64_t>(r.wall_ns));
                c.field("ringbuf_drops", r.ref).field("ringbuf_drops_total", r.aux);
                break;
            case HostRec::process_exit:
                c.lit("{\"type\":\"process_exit\"").field("t_ns", static_cast<uint64_t>(t_ns));
                c.field("wall_ns", static_cast<uint64_t>(r.wall_ns));
                c.field("pid", trace_.pid(r.proc))
                    .key("comm")
                    .padded(comm_[trace_.process(r.proc).comm]);
                c.field("open_qps", trace_.open_qps(r.proc))
                    .field("open_mrs", trace_.open_mrs(r.proc));
                break;
            default:
                verb(c, r, t_ns);
                break;
        }
        c.key("host").padded(name_[r.host]).lit("}\n");
        out_.commit(c);
    }

  private:
    void verb(JsonCursor& c, const HostRecord& r, int64_t t_ns) {
        static constexpr std::string_view kVerb[] = {
            "",          "open_device", "query_gid",  "alloc_pd",  "create_cq", "reg_mr",
            "create_qp", "modify_qp",   "modify_qp",  "modify_qp", "post_recv", "post_send",
            "poll_cq",   "poll_cq",     "destroy_qp", "dereg_mr",  "",          ""};
        const uint32_t p = r.proc;
        c.lit("{\"type\":\"verb\",\"verb\":\"").str(kVerb[static_cast<int>(r.kind)]).lit("\"");
        c.field("t_ns", static_cast<uint64_t>(t_ns))
            .field("wall_ns", static_cast<uint64_t>(r.wall_ns));
        c.field("pid", trace_.pid(p)).field("tid", trace_.tid(r));
        c.key("comm").padded(comm_[trace_.process(p).comm]).field("cgroup", trace_.cgroup(p));
        c.key("ip");
        if (const std::optional<uint16_t> ip = trace_.ip_of(r))
            c.padded(ip_[*ip]);
        else
            c.lit("null");
        hex(c.key("ctx"), trace_.ctx(p));
        switch (r.kind) {
            case HostRec::open_device:
                c.lit(",\"device\":\"mlx5_0\",\"ret\":0");
                break;
            case HostRec::query_gid:
                c.lit(",\"port\":1").field("index", sc_.hosts[r.host].ip.is_v4() ? 3 : 1);
                c.lit(",\"ret\":0")
                    .key("gid")
                    .padded(gid_[r.host])
                    .key("gid_ip")
                    .padded(ip_[r.host]);
                break;
            case HostRec::alloc_pd:
                hex(c.key("pd"), trace_.pd(p)).lit(",\"ret\":0");
                break;
            case HostRec::create_cq:
                hex(c.key("cq"), trace_.cq(p)).lit(",\"cqe\":4096,\"ret\":0");
                break;
            case HostRec::reg_mr:
            case HostRec::dereg_mr: {
                const HostMr& mr = trace_.layout().mrs()[r.ref];
                hex(c.key("mr"), trace_.mr_ptr(r.ref)).field("addr", mr.addr);
                c.field("length", mr.length).field("lkey", mr.lkey).field("rkey", mr.rkey);
                if (r.kind == HostRec::reg_mr) {
                    hex(c.key("pd"), trace_.pd(p))
                        .field("iova", mr.addr)
                        .field("access", mr.access);
                    access_names(c.key("access_flags"), mr.access).lit(",\"ret\":0");
                }
                break;
            }
            case HostRec::create_qp: {
                const HostQp& q = trace_.qp(r.ref);
                hex(c.key("qp"), q.ptr)
                    .field("qpn", q.qpn)
                    .key("qp_type")
                    .lit(q.uc ? "\"UC\"" : "\"RC\"");
                hex(c.key("pd"), trace_.pd(p));
                hex(c.key("send_cq"), trace_.cq(p));
                hex(c.key("recv_cq"), trace_.cq(p)).lit(",\"ret\":0");
                break;
            }
            case HostRec::modify_init:
            case HostRec::modify_rtr:
            case HostRec::modify_rts:
                modify(c, r);
                break;
            case HostRec::destroy_qp: {
                const HostQp& q = trace_.qp(r.ref);
                hex(c.key("qp"), q.ptr).field("qpn", q.qpn);
                break;
            }
            case HostRec::post_send: {
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                const WorkRequest w = trace_.work_request(r);
                hex(c.key("qp"), q.ptr).field("qpn", q.qpn).field("wr_id", w.wr_id);
                c.key("opcode").lit("\"").str(wr_opcode_name(w.opcode)).lit("\"");
                c.field("send_flags", w.send_flags).key("signaled");
                w.signaled ? c.lit("true") : c.lit("false");
                c.lit(",\"num_sge\":1").field("len", w.len);
                c.field_opt("remote_addr", w.remote_addr)
                    .field_opt("rkey", w.rkey)
                    .field_opt("imm", w.imm);
                c.lit(",\"chain_index\":0,\"truncated\":false");
                break;
            }
            case HostRec::post_recv: {
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                hex(c.key("qp"), q.ptr).field("qpn", q.qpn).field("wr_id", trace_.recv_wr_id(r));
                c.lit(",\"num_sge\":1").field("len", HostTrace::kRecvBufferBytes);
                c.lit(",\"chain_index\":0,\"truncated\":false");
                break;
            }
            case HostRec::poll_send:
            case HostRec::poll_recv: {
                const HostQp& q = trace_.qp(trace_.qp_of(r));
                const Completion w = trace_.completion(r);
                hex(c.key("cq"), trace_.cq(p)).field("qpn", q.qpn).field("wr_id", w.wr_id);
                c.key("status").lit("\"").str(wc_status_name(w.status)).lit("\"");
                c.field("status_code", wc_status_code(w.status));
                c.key("opcode").lit("\"").str(wc_opcode_name(w.opcode)).lit("\"");
                c.field("byte_len", w.byte_len).field_opt("imm", w.imm);
                c.lit(",\"src_qp\":0")
                    .field("wc_flags", w.wc_flags)
                    .lit(",\"index\":0,\"polled\":1");
                break;
            }
            default:
                break;
        }
    }

    // docs/insert-trace.md: the fields present are those the attribute mask names, in
    // insert-trace's order.
    void modify(JsonCursor& c, const HostRecord& r) {
        const HostQp& q = trace_.qp(r.ref);
        hex(c.key("qp"), q.ptr).field("qpn", q.qpn);
        switch (r.kind) {
            case HostRec::modify_init:
                c.field("attr_mask", kMaskInit).lit(",\"from_state\":\"RESET\",\"state\":\"INIT\"");
                c.lit(",\"port\":1,\"pkey_index\":0");
                access_names(c.key("qp_access"), q.uc
                                                     ? kAccessLocalWrite | kAccessRemoteWrite
                                                     : kAccessLocalWrite | kAccessRemoteWrite |
                                                           kAccessRemoteRead | kAccessRemoteAtomic);
                break;
            case HostRec::modify_rtr:
                c.field("attr_mask", q.uc ? kMaskRtrUc : kMaskRtrRc);
                c.lit(",\"from_state\":\"INIT\",\"state\":\"RTR\"").field("path_mtu", q.mtu);
                c.field("dest_qpn", q.dest_qpn).field("rq_psn", q.rq_psn);
                c.lit(",\"dlid\":0,\"is_global\":true").key("peer_gid").padded(gid_[q.peer_host]);
                c.key("peer_ip").padded(ip_[q.peer_host]);
                c.field("sgid_index", sc_.hosts[r.host].ip.is_v4() ? 3 : 1);
                c.lit(",\"hop_limit\":64,\"traffic_class\":106");
                if (!q.uc) c.lit(",\"min_rnr_timer\":12,\"max_dest_rd_atomic\":16");
                break;
            default:
                c.field("attr_mask", q.uc ? kMaskRtsUc : kMaskRtsRc);
                c.lit(",\"from_state\":\"RTR\",\"state\":\"RTS\"").field("sq_psn", q.sq_psn);
                if (!q.uc)
                    c.lit(",\"timeout\":14,\"retry_cnt\":7,\"rnr_retry\":7,\"max_rd_atomic\":16");
                break;
        }
        c.lit(",\"ret\":0");
    }

    const Scenario& sc_;
    const HostTrace& trace_;
    JsonOut& out_;
    std::vector<PaddedString> ip_, gid_, name_, comm_;
    std::set<std::pair<uint16_t, uint64_t>> named_;  // (host, cgroup) with a cgroup record

    static bool is_verb(HostRec k) {
        return k != HostRec::trace_start && k != HostRec::lost && k != HostRec::process_exit;
    }
};

}  // namespace

std::string trace_host_name(std::size_t host) {
    std::string name(1, 'h');  // ("h" + to_string() trips GCC 12's -Wrestrict)
    name += std::to_string(host);
    return name;
}

void write_host_records(const Scenario& sc, const Simulator&, const HostTrace& trace,
                        JsonOut& out) {
    Writer w(sc, trace, out);
    const std::span<const HostRecord> records = trace.records();
    constexpr std::size_t kAhead = 8;
    for (std::size_t n = 0; n < records.size(); ++n) {
        if (n + kAhead < records.size()) trace.prefetch(records[n + kAhead]);
        w.write(records[n]);
    }
}

bool write_host_traces(const Scenario& sc, const Simulator& sim, const HostTrace& trace,
                       const std::string& path, std::string& error) {
    JsonLinesFile file;
    if (!file.open(path, error)) return false;
    write_host_records(sc, sim, trace, file.out());
    return file.finish(error);
}

}  // namespace insert::gen
