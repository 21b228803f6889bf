// A record's kind comes from its `type` (and a verb record's `verb`) wherever they stand
// in the object, however they are written; the tools write them first, and a parser
// that read them from the line's first bytes would have to decode every line alike
// (and accept no bad one): these lines pin that down.
#include <gtest/gtest.h>

#include <string>

#include "correlator/input/line_parser.hpp"

namespace insert::correlate {
namespace {

struct Parsed {
    LineKind kind = LineKind::blank;
    WireMsg msg;
    HostEvent event;
    std::string reason;
};

Parsed parse(const std::string& line) {
    HostNames names;
    LineParser parser(names);
    const std::string buffer = line + std::string(simdjson::SIMDJSON_PADDING, '\0');
    Parsed out;
    WireQp qp;
    out.kind =
        parser.parse(buffer.data(), line.size(), buffer.size(), out.msg, qp, out.event, out.reason);
    return out;
}

const std::string kPostFields =
    R"("qp":"0x7000","qpn":100,"wr_id":7,"opcode":"RDMA_WRITE","signaled":false,"len":64,)"
    R"("remote_addr":140000000000000,"rkey":77,"chain_index":0,"wall_ns":10000,"pid":1000,)"
    R"("tid":1001,"comm":"bench","cgroup":4242,"ip":"10.9.0.1","host":"node0"})";

void expect_post_send(const std::string& line) {
    const Parsed p = parse(line);
    ASSERT_EQ(p.kind, LineKind::host_event) << line << ": " << p.reason;
    EXPECT_EQ(p.event.kind, HostKind::post_send) << line;
    EXPECT_EQ(p.event.obj, 0x7000u) << line;
    EXPECT_EQ(p.event.qpn, 100u) << line;
    EXPECT_EQ(p.event.u.post.wr_id, 7u) << line;
    EXPECT_EQ(p.event.u.post.opcode, WrOpcode::rdma_write) << line;
    EXPECT_FALSE(p.event.u.post.signaled) << line;
    EXPECT_EQ(p.event.u.post.len, 64u) << line;
    EXPECT_EQ(p.event.u.post.rkey, 77) << line;
    EXPECT_EQ(p.event.wall, 10000) << line;
    EXPECT_EQ(p.event.pid, 1000) << line;
    EXPECT_EQ(p.event.tid, 1001) << line;
    EXPECT_EQ(p.event.cgroup, 4242u) << line;
    EXPECT_EQ(p.event.comm.view(), "bench") << line;
}

TEST(RecordKind, a_verb_record_decodes_alike_wherever_type_and_verb_stand) {
    expect_post_send(R"({"type":"verb","verb":"post_send",)" + kPostFields);  // as written
    expect_post_send(R"({"verb":"post_send","type":"verb",)" + kPostFields);
    expect_post_send(R"({"type": "verb", "verb": "post_send",)" + kPostFields);
    expect_post_send(R"({"type":"verb",)" + kPostFields.substr(0, kPostFields.size() - 1) +
                     R"(,"verb":"post_send"})");
    // Escapes in the values: read by the search, never by the first bytes.
    expect_post_send(R"({"type":"v\u0065rb","verb":"post_send",)" + kPostFields);
    expect_post_send(R"({"type":"verb","verb":"post\u005fsend",)" + kPostFields);
}

TEST(RecordKind, a_msg_record_decodes_alike_with_type_first_or_last) {
    const std::string fields =
        R"("src_ip":"10.9.0.1","dst_ip":"10.9.0.2","dst_qpn":100,"src_qpn":100,"op":"WRITE",)"
        R"("psn_first":5,"psn_last":5,"pkts":1,"bytes":64,"va":140000000000000,"rkey":77,)"
        R"("dma_len":64,"t_first_ns":10800,"t_last_ns":10800,"t_ack_ns":17000,"retx_pkts":0,)"
        R"("naks":0,"rnr_naks":0,"status":"ok")";
    for (const std::string& line :
         {R"({"type":"msg",)" + fields + "}", "{" + fields + R"(,"type":"msg"})"}) {
        const Parsed p = parse(line);
        ASSERT_EQ(p.kind, LineKind::wire_msg) << line << ": " << p.reason;
        EXPECT_EQ(p.msg.dst_qpn, 100u);
        EXPECT_EQ(p.msg.psn_first, 5u);
        EXPECT_EQ(p.msg.op, Op::write);
        EXPECT_EQ(p.msg.t_first, 10800);
        EXPECT_EQ(p.msg.t_ack, 17000);
    }
}

TEST(RecordKind, leading_bytes_do_not_make_a_bad_line_good) {
    // A leading type, then no valid JSON.
    EXPECT_EQ(parse(R"({"type":"msg",})").kind, LineKind::not_json);
    EXPECT_EQ(parse(R"({"verb":"post_send","type":"verb","qp":})").kind,
              parse(R"({"type":"verb","verb":"post_send","qp":})").kind);
    EXPECT_NE(parse(R"({"type":"verb","verb":"post_send","qp":})").kind, LineKind::host_event);
    // A leading type with the rest of the record missing: the fields are still required.
    const Parsed missing = parse(R"({"type":"verb","verb":"post_send","wall_ns":1,"pid":2})");
    EXPECT_EQ(missing.kind, LineKind::bad_field);
    EXPECT_EQ(missing.reason, "qp: missing");
    // Unknown kinds either way.
    EXPECT_EQ(parse(R"({"type":"frob","x":1})").kind, LineKind::unknown_type);
    EXPECT_EQ(parse(R"({"x":1,"type":"frob"})").kind, LineKind::unknown_type);
    EXPECT_EQ(parse(R"({"type":"verb","verb":"frob","x":1})").kind, LineKind::ignored);
    EXPECT_EQ(parse(R"({"type":"verb","x":1})").kind, LineKind::bad_field);
}

}  // namespace
}  // namespace insert::correlate
