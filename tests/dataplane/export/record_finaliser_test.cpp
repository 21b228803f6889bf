// The exporter's record semantics without the encoding: which records go out at once and
// which are held, the latency fields they get, merges of one endpoint's final records from
// several workers, and the join of a split endpoint's evictions (docs/semantics.md).
#include "dataplane/export/record_finaliser.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace insert::exporter {
namespace {

using namespace insert::state;

const proto::IpAddress kDst = *proto::IpAddress::parse("10.0.0.2");

Record acked(const char* src, uint32_t qpn, uint64_t latency) {
    Record r;
    r.type = RecordType::msg;
    r.msg = MsgRecord{};
    r.msg.src_ip = *proto::IpAddress::parse(src);
    r.msg.dst_ip = kDst;
    r.msg.dst_qpn = qpn;
    r.msg.has_ack = true;
    r.msg.t_first_ns = 100;
    r.msg.t_ack_ns = 100 + latency;
    return r;
}

Record qp(uint32_t qpn, uint64_t pkts, uint64_t t_first, uint64_t t_last) {
    Record r;
    r.type = RecordType::qp;
    r.qp = QpRecord{};
    r.qp.ip = kDst;
    r.qp.qpn = qpn;
    r.qp.pkts = pkts;
    r.qp.t_first_ns = t_first;
    r.qp.t_last_ns = t_last;
    return r;
}

Record final_qp(uint32_t qpn, uint64_t pkts, uint64_t t_first, uint64_t t_last) {
    Record r = qp(qpn, pkts, t_first, t_last);
    r.qp.final = true;
    return r;
}

Record evicted(uint32_t qpn, const char* src, TransportFamily transport, uint64_t pkts,
               uint64_t t_first, uint64_t t_last) {
    Record r = final_qp(qpn, pkts, t_first, t_last);
    r.qp.evicted = true;
    r.qp.transport = transport;
    r.qp.src_ip = *proto::IpAddress::parse(src);
    return r;
}

TEST(RecordFinaliser, periodic_qp_records_go_out_with_their_endpoints_percentiles) {
    RecordFinaliser f;
    for (uint64_t latency : {1000, 2000, 3000, 4000}) {
        Record m = acked("10.0.0.1", 7, latency);
        EXPECT_TRUE(f.take(m));
    }
    Record m = acked("10.0.0.9", 7, 9000);  // another source: another part, same endpoint
    EXPECT_TRUE(f.take(m));
    Record r = qp(7, 5, 0, 10);
    ASSERT_TRUE(f.take(r));
    EXPECT_EQ(r.qp.lat_count, 5u);
    EXPECT_EQ(r.qp.lat_p50_ns, 3000u);  // nearest rank of 1000, 2000, 3000, 4000, 9000
    EXPECT_EQ(r.qp.lat_max_ns, 9000u);
    EXPECT_EQ(f.endpoints().parts(), 2u);
}

TEST(RecordFinaliser, final_records_are_held_and_merged_per_endpoint_in_arrival_order) {
    RecordFinaliser f;
    Record m = acked("10.0.0.1", 8, 500);
    f.take(m);
    Record a = final_qp(8, 3, 10, 20), b = final_qp(9, 1, 5, 6), c = final_qp(8, 4, 2, 40);
    EXPECT_FALSE(f.take(a));
    EXPECT_FALSE(f.take(b));
    EXPECT_FALSE(f.take(c));  // endpoint 8 from a second worker
    ASSERT_EQ(f.finals(), 2u);
    LatencyHistogram scratch;
    const Record& first = f.final_record(0, scratch);
    EXPECT_EQ(first.qp.qpn, 8u);
    EXPECT_EQ(first.qp.pkts, 7u);
    EXPECT_EQ(first.qp.t_first_ns, 2u);
    EXPECT_EQ(first.qp.t_last_ns, 40u);
    EXPECT_EQ(first.qp.lat_count, 1u);
    EXPECT_EQ(first.qp.lat_max_ns, 500u);
    EXPECT_EQ(f.final_record(1, scratch).qp.qpn, 9u);
    EXPECT_EQ(f.final_record(1, scratch).qp.lat_count, 0u);
    EXPECT_EQ(f.summary_endpoints(), 2u);
    f.clear_finals();
    EXPECT_EQ(f.finals(), 0u);
}

TEST(RecordFinaliser, an_evicted_part_goes_out_with_its_own_latencies_and_takes_them_along) {
    RecordFinaliser f;
    Record mine = acked("10.0.0.1", 3, 1000), other = acked("10.0.0.9", 3, 7000);
    f.take(mine);
    f.take(other);
    Record gone = evicted(3, "10.0.0.9", TransportFamily::rc, 1, 0, 10);
    ASSERT_TRUE(f.take(gone));
    EXPECT_EQ(gone.qp.lat_count, 1u);
    EXPECT_EQ(gone.qp.lat_max_ns, 7000u);
    EXPECT_EQ(f.endpoints().parts(), 1u);
    Record last = final_qp(3, 1, 20, 30);
    f.take(last);
    LatencyHistogram scratch;
    EXPECT_EQ(f.final_record(0, scratch).qp.lat_max_ns, 1000u);
    // Distinct endpoints: the evicted one is the one still alive.
    EXPECT_EQ(f.summary_endpoints(), 1u);
}

// A UD endpoint split over two workers: each evicts its part on its own. One engine would
// have evicted only when a tick (multiples of 1000 ns) came more than the timeout (300 ns)
// after the last packet and no later than the next one.
TEST(RecordFinaliser, split_evictions_join_where_one_engine_kept_the_endpoint_alive) {
    RecordFinaliser f;
    f.hold_split_evictions(300, 1000);
    // Part from .1 ends at 100: the first evicting tick is 1000; part from .9 starts at 900
    // (same incarnation). The next part starts at 5000, after tick 2000 evicted the rest.
    Record p1 = evicted(1, "10.0.0.1", TransportFamily::ud, 2, 0, 100);
    Record p2 = evicted(1, "10.0.0.9", TransportFamily::ud, 3, 900, 1500);
    Record p3 = evicted(1, "10.0.0.1", TransportFamily::ud, 4, 5000, 5100);
    EXPECT_FALSE(f.take(p3));
    EXPECT_FALSE(f.take(p2));
    EXPECT_FALSE(f.take(p1));
    // An RC eviction is never held.
    Record rc = evicted(2, "10.0.0.1", TransportFamily::rc, 1, 0, 1);
    EXPECT_TRUE(f.take(rc));
    std::vector<Record> out;
    f.join_held_evictions([&](const Record& r) { out.push_back(r); });
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].qp.pkts, 5u);
    EXPECT_EQ(out[0].qp.t_first_ns, 0u);
    EXPECT_EQ(out[0].qp.t_last_ns, 1500u);
    EXPECT_TRUE(out[0].qp.evicted);
    EXPECT_EQ(out[1].qp.pkts, 4u);
    EXPECT_EQ(out[1].qp.t_first_ns, 5000u);
}

// The part alive at the end joins the sweep: what it joins ends up in its final record.
TEST(RecordFinaliser, a_held_eviction_joined_with_the_live_part_becomes_its_final_record) {
    RecordFinaliser f;
    f.hold_split_evictions(300, 1000);
    Record early = evicted(5, "10.0.0.9", TransportFamily::ud, 2, 0, 100);
    Record alive = final_qp(5, 6, 200, 3000);
    f.take(early);
    f.take(alive);
    std::vector<Record> out;
    f.join_held_evictions([&](const Record& r) { out.push_back(r); });
    EXPECT_TRUE(out.empty());
    ASSERT_EQ(f.finals(), 1u);
    LatencyHistogram scratch;
    const Record& r = f.final_record(0, scratch);
    EXPECT_EQ(r.qp.pkts, 8u);
    EXPECT_EQ(r.qp.t_first_ns, 0u);
    EXPECT_FALSE(r.qp.evicted);
}

TEST(RecordFinaliser, bounded_memory_counts_live_endpoints_and_ended_lifetimes) {
    RecordFinaliser f;
    f.set_bounded_memory(true);
    for (uint32_t i = 0; i < 3; ++i) {
        Record gone = evicted(i, "10.0.0.1", TransportFamily::rc, 1, 0, 1);
        gone.qp.endpoint_gone = true;
        f.take(gone);
    }
    Record back = final_qp(0, 1, 10, 11);  // endpoint 0 came back: a second lifetime
    f.take(back);
    EXPECT_EQ(f.summary_endpoints(), 4u);
    EXPECT_EQ(f.endpoints().parts(), 0u);
}

}  // namespace
}  // namespace insert::exporter
