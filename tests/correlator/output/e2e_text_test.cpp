// The e2e record's text (correlator/output/e2e_text.cpp, written with one cursor): SPEC 10's
// fields in SPEC's order, nulls for what is absent, JSON escapes for the texts an input
// controls, and host names too long for the stack buffer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "correlator/input/line_parser.hpp"
#include "correlator/output/record_writer.hpp"

namespace insert::correlate {
namespace {

Comm comm_of(std::string_view text) {
    Comm c;
    c.len = static_cast<uint8_t>(text.size());
    std::copy(text.begin(), text.end(), c.chars.begin());
    return c;
}

struct Fixture {
    HostNames names;
    WireMsg msg;
    WorkRequest wr;
    Incarnation requester, responder;
    E2eRow row;

    Fixture(std::string_view host, std::string_view peer_host, std::string_view comm) {
        requester.host = names.intern(host);
        requester.ip = *Ip::parse("10.9.0.1");
        requester.qpn = 100;
        requester.pid = 1000;
        requester.comm = comm_of(comm);
        requester.cgroup = 4242;
        responder.host = names.intern(peer_host);
        responder.pid = 1100;
        responder.comm = comm_of("server");
        responder.cgroup = 77;
        msg.dst_ip = *Ip::parse("fd00::2");
        msg.dst_qpn = 200;
        msg.op = Op::read;
        msg.psn_first = 16777215;
        msg.t_first = 1'700'000'000'000'010'800;
        msg.t_ack = 1'700'000'000'000'017'000;
        msg.retx_pkts = 3;
        msg.naks = 1;
        msg.status = MsgStatus::nak_seq;
        wr.wall = 9400;
        wr.wr_id = UINT64_MAX;
        wr.len = 4096;
        wr.t_poll = 18400;
        wr.wc_status = 5;  // IBV_WC_WR_FLUSH_ERR
        row.msg = &msg;
        row.wr = &wr;
        row.requester = &requester;
        row.responder = &responder;
        row.t_post = 1'700'000'000'000'009'400;
        row.t_poll = 1'700'000'000'000'018'400;
        row.t_recv_poll = 1'700'000'000'000'018'000;
        row.host_ns = 1400;
        row.net_ns = 6200;
        row.completion_ns = 1400;
        row.total_ns = 9000;
    }
    std::string text() const {
        std::string out = "previous line\n";
        append_e2e(out, row, names);
        EXPECT_EQ(out.substr(0, 14), "previous line\n");
        return out.substr(14);
    }
};

TEST(E2eText, every_field_in_spec_order) {
    const Fixture f("node0", "node1", "bench");
    EXPECT_EQ(f.text(),
              "{\"type\":\"e2e\",\"src_ip\":\"10.9.0.1\",\"src_qpn\":100,\"dst_ip\":\"fd00::2\","
              "\"dst_qpn\":200,\"op\":\"READ\",\"bytes\":4096,\"psn_first\":16777215,"
              "\"wr_id\":18446744073709551615,\"pid\":1000,\"comm\":\"bench\",\"cgroup\":4242,"
              "\"peer_pid\":1100,\"peer_comm\":\"server\",\"t_post_ns\":1700000000000009400,"
              "\"t_first_ns\":1700000000000010800,\"t_ack_ns\":1700000000000017000,"
              "\"t_poll_ns\":1700000000000018400,\"host_ns\":1400,\"net_ns\":6200,"
              "\"completion_ns\":1400,\"total_ns\":9000,\"retx_pkts\":3,\"naks\":1,"
              "\"status\":\"nak_seq\",\"match\":\"exact\",\"host\":\"node0\","
              "\"peer_host\":\"node1\",\"peer_cgroup\":77,\"signaled\":true,"
              "\"wc_status\":\"WR_FLUSH_ERR\",\"t_recv_poll_ns\":1700000000000018000,"
              "\"t_covered_ns\":null}\n");
}

TEST(E2eText, absent_values_are_null) {
    Fixture f("node0", "node1", "bench");
    f.row.responder = nullptr;
    f.row.resync = true;
    f.row.t_post = -5;  // a negative time (a host clock behind the observer's epoch)
    f.msg.t_ack = kNone;
    f.row.t_poll = f.row.net_ns = f.row.completion_ns = f.row.total_ns = kNone;
    f.row.t_recv_poll = kNone;
    f.wr.t_poll = kNone;
    f.wr.signaled = false;
    const nlohmann::json j = nlohmann::json::parse(f.text());
    EXPECT_EQ(j["t_post_ns"], -5);
    for (const char* key :
         {"peer_pid", "peer_comm", "t_ack_ns", "t_poll_ns", "net_ns", "completion_ns", "total_ns",
          "peer_host", "peer_cgroup", "wc_status", "t_recv_poll_ns", "t_covered_ns"})
        EXPECT_TRUE(j[key].is_null()) << key;
    EXPECT_EQ(j["match"], "resync");
    EXPECT_EQ(j["signaled"], false);
    EXPECT_EQ(j.size(), 33u);
}

TEST(E2eText, input_texts_are_escaped) {
    const std::string host = "rack\\1 \"a\"";
    const std::string comm = std::string("x\"y\x01z");
    const Fixture f(host, std::string("tab\there"), comm);
    const std::string text = f.text();
    EXPECT_NE(text.find("\"comm\":\"x\\\"y\\u0001z\""), std::string::npos) << text;
    EXPECT_NE(text.find("\"host\":\"rack\\\\1 \\\"a\\\"\""), std::string::npos) << text;
    const nlohmann::json j = nlohmann::json::parse(text);
    EXPECT_EQ(j["comm"], comm);
    EXPECT_EQ(j["host"], host);
    EXPECT_EQ(j["peer_host"], "tab\there");
}

TEST(E2eText, long_host_names_need_no_stack_room) {
    // Quotes escape to two bytes each: 6,000 bytes of host name text, past the stack buffer.
    const std::string host(3000, '"');
    const std::string peer = std::string(5000, 'p');
    const Fixture f(host, peer, "bench");
    const nlohmann::json j = nlohmann::json::parse(f.text());
    EXPECT_EQ(j["host"], host);
    EXPECT_EQ(j["peer_host"], peer);
}

}  // namespace
}  // namespace insert::correlate
