// The security rules and congestion episodes of docs/correlation.md 8-9, one test each,
// through the shipped run_correlate(); expected values derived by hand in the comments.
#include <gtest/gtest.h>

#include "correlator/output/alertmanager.hpp"
#include "correlator/output/terminal_report.hpp"
#include "tests/correlator/correlate_harness.hpp"

namespace insert::correlate::test {
namespace {

const TraceProcess kClient{"hA", 100, "client", 7, "10.0.0.1"};
const TraceProcess kServer{"hB", 300, "server", 9, "10.0.0.2"};
constexpr uint64_t kBase = 0x10000;

json reg_mr(const TraceProcess& p, int64_t wall, const std::string& mr, uint64_t addr,
            uint64_t length, uint32_t access, uint32_t rkey) {
    json j = p.verb("reg_mr", wall, "");
    j.erase("qp");
    j["mr"] = mr;
    j["pd"] = "0x2000";
    j["addr"] = addr;
    j["length"] = length;
    j["iova"] = addr;
    j["access"] = access;
    j["lkey"] = rkey;
    j["rkey"] = rkey;
    j["ret"] = 0;
    j["host"] = p.host;
    return j;
}

json dereg_mr(const TraceProcess& p, int64_t wall, const std::string& mr, uint32_t rkey) {
    json j = p.verb("dereg_mr", wall, "");
    j.erase("qp");
    j["mr"] = mr;
    j["addr"] = kBase;
    j["length"] = 4096;
    j["lkey"] = rkey;
    j["rkey"] = rkey;
    j["host"] = p.host;
    return j;
}

// Client QP 17 <-> server QP 50; the server's MR rkey 77 at kBase, 4096 bytes, with the
// given access (IBV_ACCESS_REMOTE_WRITE 2, _READ 4, _ATOMIC 8), and QP access names.
std::vector<json> connection(uint32_t mr_access = 2 | 4 | 8,
                             std::vector<std::string> qp_access = {"REMOTE_WRITE", "REMOTE_READ",
                                                                   "REMOTE_ATOMIC"}) {
    std::vector<json> t = {kClient.create_qp(100, "0xa0", 17),
                           kClient.rtr(110, "0xa0", 17, "10.0.0.2", 50),
                           kClient.rts(120, "0xa0", 17, 1000),
                           kServer.create_qp(100, "0xd0", 50),
                           kServer.rtr(110, "0xd0", 50, "10.0.0.1", 17, 1000),
                           reg_mr(kServer, 105, "0xe0", kBase, 4096, mr_access, 77)};
    json init = kServer.verb("modify_qp", 106, "0xd0");
    init["qpn"] = 50;
    init["state"] = "INIT";
    init["qp_access"] = qp_access;
    init["ret"] = 0;
    init["host"] = "hB";
    t.push_back(init);
    return t;
}

json write_to(uint32_t psn, int64_t t, uint32_t rkey, uint64_t va = kBase, uint64_t len = 64,
              const std::string& src = "10.0.0.1", uint32_t dst_qpn = 50) {
    return wire_msg(src, "10.0.0.2", dst_qpn, std::nullopt, "WRITE", psn, len, t, t + 500, va, rkey,
                    "nak_access");
}

std::vector<json> alerts_of(const Outcome& run) {
    return run.of_type("alert");
}

TEST(Security, normal_traffic_raises_nothing) {
    std::vector<json> trace = connection();
    trace.push_back(kClient.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, kBase + 64, 77));
    trace.push_back(kClient.poll(2000, 17, 1, "RDMA_WRITE"));
    trace.push_back(kClient.post_send(3000, "0xa0", 17, 2, "RDMA_READ", 4096, kBase, 77));
    trace.push_back(kClient.poll(5000, 17, 2, "RDMA_READ"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1500, kBase + 64, 77),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "READ", 1001, 4096, 3100, 4500, kBase, 77)};
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    EXPECT_EQ(run.of_type("e2e").size(), 2u);
    EXPECT_TRUE(alerts_of(run).empty());
}

TEST(Security, rkey_unknown_names_victim_and_source) {
    const Outcome run = correlate({{write_to(1000, 5000, 99)}, connection()}, {"--same-clock"});
    const auto alerts = alerts_of(run);
    ASSERT_EQ(alerts.size(), 1u);
    const json& a = alerts[0];
    EXPECT_EQ(a["kind"], "rkey_unknown");
    EXPECT_EQ(a["severity"], "warning");
    EXPECT_EQ(a["t_ns"], 5000);
    EXPECT_EQ(a["count"], 1);
    EXPECT_EQ(a["victim"]["ip"], "10.0.0.2");
    EXPECT_EQ(a["victim"]["qpn"], 50);
    EXPECT_EQ(a["victim"]["pid"], 300);
    EXPECT_EQ(a["victim"]["comm"], "server");
    EXPECT_EQ(a["victim"]["cgroup"], 9);
    EXPECT_EQ(a["source"]["ip"], "10.0.0.1");
    EXPECT_EQ(a["source"]["qpn"], 17);
    EXPECT_EQ(a["source"]["pid"], 100);
    EXPECT_EQ(a["evidence"]["rkey"], 99);
    EXPECT_EQ(a["evidence"]["va"], kBase);
    EXPECT_EQ(a["evidence"]["length"], 64);
    EXPECT_EQ(run.summary()["alerts"]["rkey_unknown"], 1);
}

TEST(Security, rkey_stale_after_deregistration) {
    std::vector<json> trace = connection();
    trace.push_back(dereg_mr(kServer, 4000, "0xe0", 77));
    const Outcome run = correlate({{write_to(1000, 5000, 77)}, trace}, {"--same-clock"});
    ASSERT_EQ(alerts_of(run).size(), 1u);
    EXPECT_EQ(alerts_of(run)[0]["kind"], "rkey_stale");
}

TEST(Security, out_of_bounds_and_access_denied) {
    // 64 bytes at kBase + 4064 end exactly at the MR's end: in bounds; at kBase + 4065 not.
    std::vector<json> dp = {write_to(1000, 5000, 77, kBase + 4032),
                            write_to(1001, 5100, 77, kBase + 4033)};
    Outcome run = correlate({dp, connection()}, {"--same-clock"});
    ASSERT_EQ(alerts_of(run).size(), 1u);
    EXPECT_EQ(alerts_of(run)[0]["kind"], "out_of_bounds");
    EXPECT_EQ(alerts_of(run)[0]["evidence"]["va"], kBase + 4033);
    // The MR allows no REMOTE_READ: a READ is denied; the QP allows no REMOTE_ATOMIC: a
    // FETCH_ADD 2 s later (another episode) is denied too.
    dp = {wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "READ", 1000, 64, 5000, 5500, kBase, 77),
          wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "FETCH_ADD", 1001, 0, 2'000'005'000,
                   2'000'005'500, kBase, 77)};
    run = correlate({dp, connection(2 | 8, {"REMOTE_WRITE", "REMOTE_READ"})}, {"--same-clock"});
    const auto alerts = alerts_of(run);
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0]["kind"], "access_denied");
    EXPECT_EQ(alerts[0]["evidence"]["op"], "READ");
    EXPECT_EQ(alerts[1]["kind"], "access_denied");
    EXPECT_EQ(alerts[1]["evidence"]["op"], "FETCH_ADD");
    EXPECT_EQ(alerts[1]["evidence"]["length"], 8);
}

TEST(Security, rkey_scan_aggregates_guesses) {
    // 8 guesses 100 us apart: one rkey_unknown with count 8, and one rkey_scan raised at
    // the 8th (t = 5000 + 7 * 100000).
    std::vector<json> dp;
    for (uint32_t k = 0; k < 8; ++k) dp.push_back(write_to(1000 + k, 5000 + k * 100000, 200 + k));
    const Outcome run = correlate({dp, connection()}, {"--same-clock"});
    const auto alerts = alerts_of(run);
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0]["kind"], "rkey_unknown");
    EXPECT_EQ(alerts[0]["count"], 8);
    EXPECT_EQ(alerts[0]["t_last_ns"], 5000 + 7 * 100000);
    EXPECT_EQ(alerts[0]["evidence"]["rkeys"].size(), 8u);
    EXPECT_EQ(alerts[1]["kind"], "rkey_scan");
    EXPECT_EQ(alerts[1]["severity"], "critical");
    EXPECT_EQ(alerts[1]["t_ns"], 5000 + 7 * 100000);
    EXPECT_EQ(alerts[1]["count"], 8);
    EXPECT_EQ(alerts[1]["evidence"]["distinct_rkeys"], 8);
    // Seven guesses, or eight spread over more than the window: no scan.
    dp.pop_back();
    EXPECT_EQ(alerts_of(correlate({dp, connection()}, {"--same-clock"})).size(), 1u);
    std::vector<json> slow;
    for (uint32_t k = 0; k < 8; ++k)
        slow.push_back(write_to(1000 + k, 5000 + k * 200'000'000, 200 + k));
    const auto slow_alerts = alerts_of(correlate({slow, connection()}, {"--same-clock"}));
    ASSERT_EQ(slow_alerts.size(), 1u);
    EXPECT_EQ(slow_alerts[0]["kind"], "rkey_unknown");
    EXPECT_EQ(slow_alerts[0]["count"], 8);
}

TEST(Security, unowned_qp_and_peer_mismatch) {
    const std::vector<json> dp = {wire_msg("10.0.0.1", "10.0.0.2", 999, std::nullopt, "SEND", 5, 64,
                                           5000, 5500),  // no QP 999
                                  wire_msg("10.0.0.9", "10.0.0.2", 50, std::nullopt, "SEND", 7, 64,
                                           6000, 6500)};  // not the peer
    const Outcome run = correlate({dp, connection()}, {"--same-clock"});
    const auto alerts = alerts_of(run);
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0]["kind"], "unowned_qp");
    EXPECT_EQ(alerts[0]["victim"]["qpn"], 999);
    EXPECT_EQ(alerts[0]["victim"]["pid"], nullptr);
    EXPECT_EQ(alerts[1]["kind"], "peer_mismatch");
    EXPECT_EQ(alerts[1]["victim"]["pid"], 300);
    EXPECT_EQ(alerts[1]["source"]["ip"], "10.0.0.9");
    EXPECT_EQ(alerts[1]["source"]["pid"], nullptr);
}

// SPEC 10 v1.3: injected whatever the message's status. A forged WRITE First at the next
// PSN with a valid rkey, whose Last never comes (`incomplete`, its RETH length 4096 of
// which 1024 were seen), is an injection; a posted SEND whose last packets the capture
// lacks (`incomplete`, 6325 of 16384 bytes seen) still matches its request and is none.
TEST(Security, injected_message_whatever_its_status) {
    std::vector<json> trace = connection();
    trace.push_back(kClient.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, kBase, 77));
    trace.push_back(kClient.poll(2000, 17, 1, "RDMA_WRITE"));
    trace.push_back(kClient.post_send(3000, "0xa0", 17, 2, "SEND", 16384));
    json forged = wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1002, 1024, 9000, std::nullopt,
                           kBase, 77, "incomplete");
    forged["dma_len"] = 4096;  // inside the MR: no out_of_bounds
    std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1500, kBase, 77),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1001, 6325, 3100, std::nullopt,
                 std::nullopt, std::nullopt, "incomplete"),
        forged};
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    ASSERT_EQ(alerts_of(run).size(), 1u);
    const json a = alerts_of(run)[0];
    EXPECT_EQ(a["kind"], "injected_message");
    EXPECT_EQ(a["evidence"]["psn_first"], 1002);
    EXPECT_EQ(a["evidence"]["status"], "incomplete");
    EXPECT_EQ(a["source"]["claimed"], true);
    // The cut SEND is joined to its request (wr_id 2), not wire-only.
    const auto e2e = run.of_type("e2e");
    ASSERT_EQ(e2e.size(), 2u);
    EXPECT_EQ(e2e[1]["wr_id"], 2);
    EXPECT_EQ(e2e[1]["status"], "incomplete");
    // A request shorter than the bytes seen cannot be that message: wire-only, injected
    // too (one alert of the two offences, under a second apart).
    trace[trace.size() - 1]["len"] = 4096;
    const auto both = alerts_of(correlate({dp, trace}, {"--same-clock"}));
    ASSERT_EQ(both.size(), 1u);
    EXPECT_EQ(both[0]["count"], 2);
    EXPECT_EQ(both[0]["evidence"]["psn_first"], 1001);
}

TEST(Security, injected_message_needs_a_traced_data_path) {
    // The client posted one WRITE (matched); a second WRITE from its QP was never posted.
    std::vector<json> trace = connection();
    trace.push_back(kClient.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, kBase, 77));
    trace.push_back(kClient.poll(2000, 17, 1, "RDMA_WRITE"));
    std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1500, kBase, 77),
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1001, 128, 9000, 9500, kBase, 77)};
    Outcome run = correlate({dp, trace}, {"--same-clock"});
    ASSERT_EQ(alerts_of(run).size(), 1u);
    EXPECT_EQ(alerts_of(run)[0]["kind"], "injected_message");
    EXPECT_EQ(alerts_of(run)[0]["victim"]["pid"], 300);
    EXPECT_EQ(alerts_of(run)[0]["source"]["pid"], 100);
    EXPECT_EQ(alerts_of(run)[0]["evidence"]["psn_first"], 1001);
    // Before the QP's first matched message: not shown to be traced, no alert.
    std::swap(dp[0]["t_first_ns"], dp[1]["t_first_ns"]);
    dp[0]["psn_first"] = 999;
    EXPECT_TRUE(alerts_of(correlate({dp, trace}, {"--same-clock"})).empty());
    // A trace loss reported near it: no alert.
    dp[0]["psn_first"] = 1001;
    std::swap(dp[0]["t_first_ns"], dp[1]["t_first_ns"]);
    trace.push_back({{"type", "lost"},
                     {"t_ns", 8000},
                     {"wall_ns", 9200},
                     {"ringbuf_drops", 3},
                     {"ringbuf_drops_total", 3},
                     {"host", "hA"}});
    run = correlate({dp, trace}, {"--same-clock"});
    EXPECT_TRUE(alerts_of(run).empty());
    EXPECT_EQ(run.summary()["trace_drops"], 3);
}

TEST(Security, alertmanager_body_carries_labels_and_time) {
    const Outcome run = correlate({{write_to(1000, 1'700'000'000'123'456'789, 99)}, connection()},
                                  {"--same-clock"});
    ASSERT_EQ(alerts_of(run).size(), 1u);
    // Rebuild the alert the way the run did, through the library, and check the body.
    Alert a;
    a.kind = AlertKind::rkey_unknown;
    a.t_ns = 1'700'000'000'123'456'789;
    a.count = 1;
    a.first.victim_ip = *Ip::parse("10.0.0.2");
    a.first.victim_qpn = 50;
    a.first.victim.traced = true;
    a.first.victim.pid = 300;
    a.first.source_ip = *Ip::parse("10.0.0.1");
    const json body = json::parse(alertmanager_body({a}));
    ASSERT_EQ(body.size(), 1u);
    EXPECT_EQ(body[0]["labels"]["alertname"], "insert_rkey_unknown");
    EXPECT_EQ(body[0]["labels"]["victim_pid"], "300");
    EXPECT_EQ(body[0]["labels"]["victim_ip"], "10.0.0.2");
    EXPECT_EQ(body[0]["startsAt"], "2023-11-14T22:13:20.123456789Z");
    EXPECT_TRUE(json::parse(body[0]["annotations"]["record"].get<std::string>()).is_object());
    std::string host, port, prefix, error;
    EXPECT_TRUE(parse_alertmanager_url("http://127.0.0.1:9093", host, port, prefix, error));
    EXPECT_EQ(port, "9093");
    EXPECT_FALSE(parse_alertmanager_url("ftp://x:1", host, port, prefix, error));
}

// docs/correlation.md 8, evidence.origin: a msg record with insert-dp's origin fields.
json with_origin(json m, const std::string& mac, int ttl, std::optional<int> port) {
    m["src_mac"] = mac;
    m["ttl"] = ttl;
    m["port"] = port ? json(*port) : json(nullptr);
    return m;
}

// The client's two posted WRITEs came from its NIC (02:..:01, TTL 64, port 0); three SENDs
// from its address at the PSNs before them, posted by nobody (before the QP's first matched
// message: no alert), came from elsewhere (02:..:05, TTL 63, port 1). A WRITE at the next PSN that
// nobody posted (injected_message) comes from that elsewhere too: its origin differs in
// all three from the usual one, which is the posted messages' (2) although the unposted
// ones are more (3). A SEND from 10.0.0.9 (peer_mismatch) has no earlier message of that
// address to compare with.
TEST(Security, origin_against_the_claimed_sources_usual_packets) {
    const std::string kOwn = "02:00:00:00:00:01", kOther = "02:00:00:00:00:05";
    std::vector<json> trace = connection();
    trace.push_back(kClient.post_send(1500, "0xa0", 17, 1, "RDMA_WRITE", 64, kBase, 77));
    trace.push_back(kClient.poll(2500, 17, 1, "RDMA_WRITE"));
    trace.push_back(kClient.post_send(2600, "0xa0", 17, 2, "RDMA_WRITE", 64, kBase, 77));
    trace.push_back(kClient.poll(3500, 17, 2, "RDMA_WRITE"));
    std::vector<json> dp;
    for (uint32_t k = 0; k < 3; ++k)
        dp.push_back(with_origin(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000 + k, 32,
                                          1000 + 100 * k, 1050 + 100 * k),
                                 kOther, 63, 1));
    dp.push_back(with_origin(
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1003, 64, 2000, 2400, kBase, 77), kOwn,
        64, 0));
    dp.push_back(with_origin(
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1004, 64, 3000, 3400, kBase, 77), kOwn,
        64, 0));
    dp.push_back(
        with_origin(wire_msg("10.0.0.9", "10.0.0.2", 50, std::nullopt, "SEND", 7, 64, 6000, 6500),
                    "02:00:00:00:00:09", 60, 1));
    dp.push_back(with_origin(
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1005, 64, 9000, 9500, kBase, 77), kOther,
        63, 1));
    std::string report;
    const Outcome run = correlate({dp, trace}, {"--same-clock"}, &report);
    const auto alerts = alerts_of(run);
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0]["kind"], "peer_mismatch");
    const json stranger = alerts[0]["evidence"]["origin"];
    EXPECT_EQ(stranger["src_mac"], "02:00:00:00:00:09");
    EXPECT_EQ(stranger["ttl"], 60);
    EXPECT_EQ(stranger["port"], 1);
    EXPECT_EQ(stranger["usual"], nullptr);
    EXPECT_EQ(stranger["differs"], json::array());
    EXPECT_EQ(alerts[1]["kind"], "injected_message");
    const json forged = alerts[1]["evidence"]["origin"];
    EXPECT_EQ(forged["src_mac"], kOther);
    EXPECT_EQ(forged["ttl"], 63);
    EXPECT_EQ(forged["port"], 1);
    EXPECT_EQ(forged["usual"], json({{"src_mac", kOwn}, {"ttl", 64}, {"port", 0}}));
    EXPECT_EQ(forged["differs"], json({"src_mac", "ttl", "port"}));
    // The terminal says it in words.
    EXPECT_NE(report.find("arrived with source MAC 02:00:00:00:00:05, TTL 63, port 1 where "
                          "10.0.0.1's packets had 02:00:00:00:00:01, TTL 64, port 0"),
              std::string::npos)
        << report;
    EXPECT_NE(report.find("arrived with source MAC 02:00:00:00:00:09, TTL 60, port 1 (no earlier "
                          "packets of 10.0.0.9 to compare)"),
              std::string::npos)
        << report;
    // Other kinds have no origin; a msg record without the fields (an older insert-dp) gives
    // a null one.
    dp.back().erase("src_mac");
    dp.back().erase("ttl");
    dp.back().erase("port");
    const auto older = alerts_of(correlate({dp, trace}, {"--same-clock"}));
    ASSERT_EQ(older.size(), 2u);
    EXPECT_TRUE(older[1]["evidence"].contains("origin"));
    EXPECT_EQ(older[1]["evidence"]["origin"], nullptr);
    const auto scan =
        alerts_of(correlate({{write_to(1000, 5000, 99)}, connection()}, {"--same-clock"}));
    ASSERT_EQ(scan.size(), 1u);
    EXPECT_FALSE(scan[0]["evidence"].contains("origin"));
}

// The same evidence in the Alertmanager summary, with the MACs the record carries.
TEST(Security, alertmanager_summary_says_where_the_packet_came_from) {
    Alert a;
    a.kind = AlertKind::injected_message;
    a.count = 1;
    a.first.kind = a.kind;
    a.first.victim_ip = *Ip::parse("10.88.0.2");
    a.first.source_ip = *Ip::parse("10.88.0.1");
    PacketOrigin seen, usual;
    seen.known = usual.known = true;
    seen.mac = {0x02, 0, 0, 0, 0, 0x05};
    seen.ttl = 63;
    usual.mac = {0x02, 0, 0, 0, 0, 0x01};
    usual.ttl = 64;
    a.first.origin = compare_origin(seen, usual);
    std::string summary;
    for (const auto& [name, value] : alertmanager_alert(a).annotations)
        if (name == "summary") summary = value;
    EXPECT_NE(summary.find("; arrived with source MAC 02:00:00:00:00:05, TTL 63 where "
                           "10.88.0.1's packets had 02:00:00:00:00:01, TTL 64"),
              std::string::npos)
        << summary;
}

// Destination 10.0.0.2: 100 quiet messages (net 5 us) from 0 to 99 ms; then from 200 ms,
// 20 ms of congestion: an incast sender (pid 100, 8 KB each) sees net 205 us and a victim
// (pid 500, 64 B) 210 us. Baseline = p10 = 5 us; bins of 10 ms. `lead_in`: messages of
// pid 100 alone, just as slow, 1 ms apart from 180 ms on.
std::pair<std::vector<json>, std::vector<json>> incast_inputs(int lead_in = 0) {
    const TraceProcess victim{"hC", 500, "victim", 11, "10.0.0.3"};
    std::vector<json> trace = connection();
    trace.push_back(victim.create_qp(100, "0xc0", 30));
    trace.push_back(victim.rtr(110, "0xc0", 30, "10.0.0.2", 60));
    trace.push_back(kServer.create_qp(100, "0xd8", 60));  // the victim's peer on hB
    trace.push_back(kServer.rtr(110, "0xd8", 60, "10.0.0.3", 30));
    std::vector<json> dp;
    uint32_t psn = 1000;
    for (int k = 0; k < 100; ++k)
        dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", psn++, 64, k * 1'000'000,
                              k * 1'000'000 + 5'000));
    for (int k = 0; k < lead_in; ++k) {
        const int64_t t = 180'000'000 + k * 1'000'000;
        dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", psn++, 8192, t, t + 205'000));
    }
    for (int k = 0; k < 20; ++k) {
        const int64_t t = 200'000'000 + k * 1'000'000;
        dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", psn++, 8192, t, t + 205'000));
        dp.push_back(
            wire_msg("10.0.0.3", "10.0.0.2", 60, 30, "SEND", 5000 + k, 64, t + 1000, t + 211'000));
    }
    dp.push_back({{"type", "qp"},
                  {"ip", "10.0.0.1"},
                  {"qpn", 17},
                  {"peer_ip", "10.0.0.2"},
                  {"peer_qpn", 50},
                  {"pair_by", "sport"},
                  {"pkts", 140},
                  {"cnps", 6},
                  {"ecn_ce", 0},
                  {"t_first_ns", 0},
                  {"t_last_ns", 220'000'000},
                  {"final", true}});
    return {dp, trace};
}

TEST(Congestion, episode_names_contributors_and_victims) {
    const auto [dp, trace] = incast_inputs();
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto episodes = run.of_type("congestion");
    ASSERT_EQ(episodes.size(), 1u);
    const json& e = episodes[0];
    EXPECT_EQ(e["where"]["node"], "hB");  // the responders' host
    EXPECT_EQ(e["where"]["dst_ips"], json::array({"10.0.0.2"}));
    EXPECT_EQ(e["t_start_ns"], 200'000'000);
    EXPECT_EQ(e["t_end_ns"], 220'000'000);
    EXPECT_EQ(e["signals"]["msgs"], 40);
    EXPECT_EQ(e["signals"]["baseline_net_ns"], 5000);
    EXPECT_EQ(e["signals"]["p99_net_ns"], 210000);
    EXPECT_EQ(e["signals"]["cnps"], 6);
    ASSERT_EQ(e["contributors"].size(), 2u);
    EXPECT_EQ(e["contributors"][0]["pid"], 100);  // 20 x 8192 bytes first
    EXPECT_EQ(e["contributors"][0]["bytes"], 20 * 8192);
    EXPECT_EQ(e["contributors"][0]["cnps"], 6);
    EXPECT_EQ(e["contributors"][1]["pid"], 500);
    EXPECT_EQ(e["contributors"][0]["bytes_share"], 0.9922);  // 163840 of 165120 bytes
    EXPECT_EQ(e["contributors"][1]["bytes_share"], 0.0078);
    EXPECT_EQ(e["contributors"][0]["victim"], true);
    ASSERT_EQ(e["victims"].size(), 2u);
    // Per message (SPEC 10 v1.3). pid 500 sent nothing to hB before: no baseline of its
    // own, so its excess is over the node's (210 us - 5 us), the most added latency first.
    const json& v = e["victims"][0];
    EXPECT_EQ(v["pid"], 500);
    EXPECT_EQ(v["comm"], "victim");
    EXPECT_EQ(v["msgs"], 20);
    EXPECT_EQ(v["net_ns_mean"], 210000);
    EXPECT_EQ(v["net_ns_p99"], 210000);
    EXPECT_TRUE(v["baseline_net_ns_mean"].is_null());
    EXPECT_TRUE(v["baseline_net_ns_p99"].is_null());
    EXPECT_TRUE(v["added_net_ns_mean"].is_null());
    EXPECT_TRUE(v["added_net_ns_p99"].is_null());
    EXPECT_EQ(v["bytes_share"], 0.0078);
    // pid 100's 100 earlier messages at 5 us are its own baseline; 205 us in the episode.
    const json& w = e["victims"][1];
    EXPECT_EQ(w["pid"], 100);
    EXPECT_EQ(w["net_ns_mean"], 205000);
    EXPECT_EQ(w["baseline_net_ns_mean"], 5000);
    EXPECT_EQ(w["baseline_net_ns_p99"], 5000);
    EXPECT_EQ(w["added_net_ns_mean"], 200000);
    EXPECT_EQ(w["added_net_ns_p99"], 200000);
    EXPECT_FALSE(w.contains("added_net_ns"));  // a sum over messages is not a latency
    EXPECT_EQ(run.summary()["congestion"], 1);
}

// One application alone slow at the run's edge is it queueing behind itself (or its own
// jitter), not the episode: pid 100's 10 messages at 180-189 ms, as slow as in the incast,
// make bin 18 congested, two bins before the incast's, but the episode still starts where
// a second application does (200 ms); those messages are pid 100's own latency outside
// episodes, which its incast messages do not exceed: not a victim.
TEST(Congestion, an_episode_starts_and_ends_where_applications_contend) {
    const auto [dp, trace] = incast_inputs(10);
    const Outcome run = correlate({dp, trace}, {"--same-clock"});
    const auto episodes = run.of_type("congestion");
    ASSERT_EQ(episodes.size(), 1u);
    const json e = episodes[0];
    EXPECT_EQ(e["t_start_ns"], 200'000'000);
    EXPECT_EQ(e["t_end_ns"], 220'000'000);
    EXPECT_EQ(e["signals"]["msgs"], 40);
    ASSERT_EQ(e["victims"].size(), 1u);
    EXPECT_EQ(e["victims"][0]["pid"], 500);
    ASSERT_EQ(e["contributors"].size(), 2u);
    EXPECT_EQ(e["contributors"][0]["pid"], 100);
    EXPECT_EQ(e["contributors"][0]["victim"], false);
}

TEST(Congestion, steady_traffic_has_no_episode) {
    std::vector<json> dp;
    for (int k = 0; k < 300; ++k)
        dp.push_back(wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000 + k, 64, k * 1'000'000,
                              k * 1'000'000 + 5'000 + (k % 7) * 300));
    EXPECT_TRUE(correlate({dp, connection()}, {"--same-clock"}).of_type("congestion").empty());
}

// A process names itself (prctl PR_SET_NAME takes any bytes): an attacker whose comm holds
// an ESC sequence would rewrite the operator's terminal when the report names it. Control
// characters are shown as \xNN; other UTF-8 stays as it is.
TEST(TerminalReport, names_from_the_input_cannot_drive_the_terminal) {
    EXPECT_EQ(terminal_text("ok-\xc3\xa9"), "ok-\xc3\xa9");  // UTF-8 e-acute
    EXPECT_EQ(terminal_text("a\x1b[2Jb\r\x7f"), "a\\x1b[2Jb\\x0d\\x7f");
    EXPECT_EQ(terminal_text("c1\xc2\x9b"), "c1\\xc2\\x9b");  // CSI as a C1 control

    TraceProcess evil = kClient;
    evil.comm = "x\x1b]0;owned\x07\r";
    evil.host = "h\x1b[2J";
    std::vector<json> trace = connection();
    for (json& r : trace)
        if (r["pid"] == kClient.pid) r["comm"] = evil.comm, r["host"] = evil.host;
    trace.push_back(evil.post_send(1000, "0xa0", 17, 1, "RDMA_WRITE", 64, kBase + 64, 77));
    trace.push_back(evil.poll(2000, 17, 1, "RDMA_WRITE"));
    const std::vector<json> dp = {
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "WRITE", 1000, 64, 1100, 1500, kBase + 64, 77),
        write_to(1001, 5000, 99)};
    std::string report;
    const Outcome run = correlate({dp, trace}, {"--same-clock"}, &report);
    ASSERT_EQ(run.status, 0);
    // rkey_unknown, its source the renamed client; and, the client having posted no such
    // WRITE, injected_message (unacknowledged: v1.3, whatever its status).
    ASSERT_EQ(alerts_of(run).size(), 2u);
    EXPECT_EQ(report.find_first_of("\x1b\x07\r"), std::string::npos) << report;
    EXPECT_NE(report.find("x\\x1b]0;owned\\x07\\x0d[100]"), std::string::npos) << report;
    EXPECT_NE(report.find("h\\x1b[2J"), std::string::npos) << report;
}

}  // namespace
}  // namespace insert::correlate::test
