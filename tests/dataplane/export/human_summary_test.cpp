// The terminal summary (dataplane/export/human_summary.hpp) ranks and totals what the
// records say.
#include <gtest/gtest.h>

#include "dataplane/export/human_summary.hpp"

using namespace insert;

namespace {
state::Record qp(const char* ip, uint32_t qpn, uint64_t bytes, uint64_t dup, uint64_t cnps) {
    state::Record r;
    r.type = state::RecordType::qp;
    r.qp = state::QpRecord{};
    r.qp.ip = *proto::IpAddress::parse(ip);
    r.qp.qpn = qpn;
    r.qp.bytes = bytes;
    r.qp.pkts = bytes / 100 + 1;
    r.qp.dup_pkts = dup;
    r.qp.cnps = cnps;
    r.qp.final = true;
    return r;
}
}  // namespace

TEST(HumanSummary, ranks_top_qps_and_hot_spots_from_final_records) {
    exporter::HumanSummary s(2);
    s.observe(qp("10.0.0.1", 1, 500, 0, 0));
    s.observe(qp("10.0.0.2", 2, 900, 7, 0));
    s.observe(qp("10.0.0.3", 3, 700, 0, 3));
    state::Record periodic = qp("10.0.0.9", 9, 99999, 0, 0);
    periodic.qp.final = false;  // periodic reports are not totals
    s.observe(periodic);
    state::Record m;
    m.type = state::RecordType::msg;
    m.msg.has_ack = true;
    m.msg.t_first_ns = 1000;
    m.msg.t_ack_ns = 3000;
    s.observe(m);

    exporter::SummaryCounts counts;
    counts.pkts = 10;
    counts.msgs = 1;
    exporter::RunInfo run;
    run.input = "x.pcap";
    run.shard_policy = "ip-pair";
    run.worker_frames = {6, 4};
    const std::string text = s.render(counts, run);
    EXPECT_EQ(s.final_qps(), 3u);
    const auto top = text.find("Top 2 QPs");
    ASSERT_NE(top, std::string::npos) << text;
    // QPNs as people read them (perftest, tshark): hex.
    const auto first = text.find("10.0.0.2/0x000002", top);
    const auto second = text.find("10.0.0.3/0x000003", top);
    ASSERT_NE(first, std::string::npos) << text;
    EXPECT_LT(first, second);
    EXPECT_EQ(text.find("10.0.0.9"), std::string::npos);
    EXPECT_NE(text.find("Retransmission hot spots"), std::string::npos);
    EXPECT_NE(text.find("Congestion hot spots"), std::string::npos);
    EXPECT_NE(text.find("p50 2000 ns"), std::string::npos) << text;
    EXPECT_NE(text.find("60.0%"), std::string::npos) << text;
    EXPECT_NE(text.find("payload bytes"), std::string::npos);
    EXPECT_EQ(text.find("limits"), std::string::npos);  // nothing ran out
}

// Every limit that was reached is on the terminal, never only in a counter.
TEST(HumanSummary, limits_line_names_every_limit_reached) {
    exporter::HumanSummary s(2);
    exporter::SummaryCounts counts;
    exporter::RunInfo run;
    run.worker_frames = {1};
    run.table_full = 12345;
    run.table_full_endpoints = 678;
    run.records_dropped = 2;
    run.evicted = 3;
    run.msgs_overflow = 4;
    run.orphans_dropped = 5;
    run.events_unwindowed = 6;
    const std::string text = s.render(counts, run);
    EXPECT_NE(text.find("limits      table full 12,345 pkts (678 endpoints), records dropped 2, "
                        "evicted idle 3, msgs frozen early 4, held pkts dropped 5, "
                        "events without a window 6"),
              std::string::npos)
        << text;
}
