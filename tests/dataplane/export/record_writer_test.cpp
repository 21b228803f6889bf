// SPEC.md section 7: field names, nulls, IP text and the qp latency fill.
#include "dataplane/export/record_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <cstdio>
#include <string>
#include <vector>

#include "dataplane/common/version.hpp"

namespace insert::exporter {
namespace {

using namespace insert::state;

Record make_msg() {
    Record r;
    r.type = RecordType::msg;
    MsgRecord& m = r.msg;
    m = MsgRecord{};
    m.src_ip = *proto::IpAddress::parse("10.0.0.1");
    m.dst_ip = *proto::IpAddress::parse("fd00::2");
    m.dst_qpn = 34;
    m.op = MsgOp::send;
    m.psn_first = 5;
    m.psn_last = 7;
    m.pkts = 3;
    m.bytes = 2100;
    m.t_first_ns = 1000;
    m.t_last_ns = 1500;
    m.has_ack = true;
    m.t_ack_ns = 4000;
    m.status = MsgStatus::ok;
    m.origin.src_mac = {0x02, 0x1e, 0x47, 0x00, 0x00, 0x0a};
    m.origin.ttl = 63;
    return r;
}

TEST(RecordJson, msg_has_every_spec_field_with_nulls_for_absent_values) {
    std::string out;
    append_json(out, make_msg());
    EXPECT_EQ(out,
              "{\"type\":\"msg\",\"src_ip\":\"10.0.0.1\",\"dst_ip\":\"fd00::2\",\"dst_qpn\":34,"
              "\"src_qpn\":null,\"op\":\"SEND\",\"imm\":null,\"inv\":null,\"psn_first\":5,"
              "\"psn_last\":7,\"pkts\":3,\"bytes\":2100,\"va\":null,\"rkey\":null,"
              "\"dma_len\":null,\"t_first_ns\":1000,\"t_last_ns\":1500,\"t_ack_ns\":4000,"
              "\"latency_ns\":3000,\"retx_pkts\":0,\"naks\":0,\"rnr_naks\":0,\"status\":\"ok\","
              // Extras: the opening packet's origin (docs/semantics.md); no port in a replay.
              "\"src_mac\":\"02:1e:47:00:00:0a\",\"ttl\":63,\"port\":null}");
}

TEST(RecordJson, summary_lists_every_malformed_reason) {
    SummaryCounts s;
    s.pkts = 10;
    s.roce_pkts = 6;
    s.non_roce_pkts = 2;
    s.malformed[static_cast<int>(proto::Malformed::truncated)] = 2;
    s.endpoints = 4;
    s.connections = 1;
    s.msgs = 3;
    s.table_full_pkts = 7;
    s.table_full_endpoints = 2;
    std::string out;
    append_summary_json(out, s);
    // The schema version right after the type (docs/records.md).
    std::string want = "{\"type\":\"summary\",\"schema\":\"";
    want += kRecordSchema;
    want +=
        "\",\"pkts\":10,\"roce_pkts\":6,\"non_roce_pkts\":2,"
        "\"malformed\":{\"length_mismatch\":0,\"truncated\":2,\"reserved_opcode\":0},"
        "\"endpoints\":4,\"connections\":1,\"msgs\":3,"
        "\"table_full\":{\"pkts\":7,\"endpoints\":2},\"interrupted\":false,"
        "\"signal\":null,\"wall_s\":0.000000,\"mpps\":0.000000}";
    EXPECT_EQ(out, want);
    // A run stopped by a signal says so.
    s.signal = "SIGHUP";
    out.clear();
    append_summary_json(out, s);
    EXPECT_NE(out.find("\"interrupted\":true,\"signal\":\"SIGHUP\""), std::string::npos) << out;
}

Record make_final_qp(uint64_t pkts, uint64_t t_first) {
    Record q;
    q.type = RecordType::qp;
    q.qp = QpRecord{};
    q.qp.ip = *proto::IpAddress::parse("fd00::2");
    q.qp.qpn = 34;
    q.qp.final = true;
    q.qp.pkts = pkts;
    q.qp.t_first_ns = t_first;
    q.qp.t_last_ns = t_first + 10;
    return q;
}

std::string read_all(std::FILE* f) {
    std::rewind(f);
    char buf[4096];
    std::string all;
    while (std::fgets(buf, sizeof(buf), f)) all += buf;
    return all;
}

TEST(RecordWriter, qp_record_gets_nearest_rank_latencies_of_its_messages) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    std::vector<Record> seen;
    {
        RecordWriter w(f);
        w.set_observer([&](const Record& r) { seen.push_back(r); });
        // Latencies 100, 200, ..., 1000 ns: p50 = 500 (5 of 10 at or below), p99 = 1000.
        for (int i = 1; i <= 10; ++i) {
            Record m = make_msg();
            m.msg.t_first_ns = 0;
            m.msg.t_ack_ns = static_cast<uint64_t>(i) * 100;
            w.write(m);
        }
        Record q = make_final_qp(5, 0);
        w.write(q);
        w.write_summary(SummaryCounts{});
        ASSERT_TRUE(w.flush());
    }
    ASSERT_EQ(seen.size(), 11u);
    const QpRecord& q = seen.back().qp;
    EXPECT_EQ(q.lat_count, 10u);
    EXPECT_EQ(q.lat_p50_ns, 500u);
    EXPECT_EQ(q.lat_p99_ns, 1000u);
    EXPECT_EQ(q.lat_max_ns, 1000u);
    const std::string all = read_all(f);
    std::fclose(f);
    EXPECT_NE(
        all.find("\"lat_p50_ns\":500,\"lat_p99_ns\":1000,\"lat_max_ns\":1000,\"final\":true}"),
        std::string::npos);
    EXPECT_NE(all.find("\"peer_ip\":null,\"peer_qpn\":null,\"pair_by\":null,\"transport\":null"),
              std::string::npos);
    EXPECT_NE(all.find("\"endpoints\":1,"), std::string::npos);
}

TEST(RecordWriter, final_records_of_one_endpoint_from_two_workers_merge_into_one) {
    std::vector<Record> seen;
    RecordWriter w(nullptr);
    w.set_observer([&](const Record& r) { seen.push_back(r); });
    Record a = make_final_qp(3, 500);
    a.qp.transport = TransportFamily::ud;
    a.qp.bytes = 30;
    Record b = make_final_qp(4, 200);
    b.qp.transport = TransportFamily::ud;
    b.qp.bytes = 40;
    b.qp.ecn_ce = 1;
    w.write(a);
    w.write(b);
    EXPECT_TRUE(seen.empty());  // held until the end
    SummaryCounts s;
    s.endpoints = 2;  // what two workers count
    w.write_summary(s);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].qp.pkts, 7u);
    EXPECT_EQ(seen[0].qp.bytes, 70u);
    EXPECT_EQ(seen[0].qp.ecn_ce, 1u);
    EXPECT_EQ(seen[0].qp.t_first_ns, 200u);
    EXPECT_EQ(seen[0].qp.t_last_ns, 510u);
    EXPECT_EQ(seen[0].qp.transport, TransportFamily::ud);
}

TEST(RecordWriter, many_final_records_come_out_in_arrival_order_with_their_own_latencies) {
    // Past a few thousand final records half are formatted on a second thread: the file
    // and the observer must still see every one once, in arrival order, each with the
    // percentiles of its own endpoint's messages.
    constexpr uint32_t kFinals = 10000;
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    std::vector<uint32_t> observed;
    {
        RecordWriter w(f);
        w.set_observer([&](const Record& r) {
            if (r.type == RecordType::qp) observed.push_back(r.qp.qpn);
        });
        for (uint32_t i = 0; i < kFinals; ++i) {
            const uint32_t qpn = (i * 7919) % 100000 + 1;  // arrival order != qpn order
            Record m = make_msg();
            m.msg.dst_qpn = qpn;
            m.msg.t_first_ns = 0;
            m.msg.t_ack_ns = qpn;  // latency = qpn
            w.write(m);
            Record q = make_final_qp(1, 0);
            q.qp.qpn = qpn;
            w.write(q);
        }
        w.write_summary(SummaryCounts{});
        ASSERT_TRUE(w.flush());
    }
    ASSERT_EQ(observed.size(), kFinals);
    for (uint32_t i = 0; i < kFinals; ++i) ASSERT_EQ(observed[i], (i * 7919) % 100000 + 1) << i;
    const std::string all = read_all(f);
    std::fclose(f);
    std::size_t pos = 0;
    uint32_t finals = 0;
    for (std::size_t at; (at = all.find("{\"type\":\"qp\"", pos)) != std::string::npos;
         pos = at + 1) {
        const uint32_t qpn = (finals * 7919) % 100000 + 1;
        const std::size_t eol = all.find('\n', at);
        const std::string line = all.substr(at, eol - at);
        ASSERT_NE(line.find("\"qpn\":" + std::to_string(qpn) + ","), std::string::npos) << line;
        ASSERT_NE(line.find("\"lat_p50_ns\":" + std::to_string(qpn) + ","), std::string::npos)
            << line;
        ++finals;
    }
    EXPECT_EQ(finals, kFinals);
    EXPECT_NE(all.find("\"endpoints\":" + std::to_string(kFinals) + ","), std::string::npos);
}

TEST(LatencyHistogram, exact_while_small) {
    LatencyHistogram h;
    for (uint64_t v : {7u, 3u, 9u, 1u}) h.add(v);
    EXPECT_EQ(h.percentile(50), 3u);  // ranks: 1 3 7 9; ceil(0.5*4) = 2nd
    EXPECT_EQ(h.percentile(99), 9u);
    EXPECT_EQ(h.percentile(75), 7u);
    EXPECT_EQ(h.max(), 9u);
}

TEST(LatencyHistogram, exact_across_the_inline_samples_and_the_vector) {
    // Nearest-rank percentiles stay exact at every count from 1 to past the inline buffer,
    // whichever order the samples came in.
    const uint64_t values[] = {50, 10, 40, 20, 30, 90, 60, 80, 70, 100};
    LatencyHistogram h;
    std::vector<uint64_t> seen;
    for (const uint64_t v : values) {
        h.add(v);
        seen.push_back(v);
        std::vector<uint64_t> sorted = seen;
        std::sort(sorted.begin(), sorted.end());
        for (const double p : {1.0, 50.0, 75.0, 99.0, 100.0}) {
            const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * sorted.size()));
            EXPECT_EQ(h.percentile(p), sorted[std::max<std::size_t>(rank, 1) - 1])
                << "p" << p << " after " << seen.size() << " samples";
        }
        EXPECT_EQ(h.count(), seen.size());
        EXPECT_EQ(h.max(), sorted.back());
        EXPECT_EQ(h.min(), sorted.front());
    }
}

TEST(LatencyHistogram, within_one_percent_after_spilling) {
    LatencyHistogram h;
    const uint64_t n = LatencyHistogram::kExactLimit * 3;
    for (uint64_t i = 1; i <= n; ++i) h.add(i * 997);  // 997 ns .. ~12 ms
    const double exact_p50 = static_cast<double>((n / 2) * 997);
    const double exact_p99 = static_cast<double>(((n * 99 + 99) / 100) * 997);
    EXPECT_NEAR(static_cast<double>(h.percentile(50)), exact_p50, exact_p50 * 0.01);
    EXPECT_NEAR(static_cast<double>(h.percentile(99)), exact_p99, exact_p99 * 0.01);
    EXPECT_EQ(h.max(), n * 997);
}

TEST(LatencyHistogram, within_one_percent_when_later_samples_are_smaller) {
    // After spilling, samples below every earlier one extend the bucket array downwards.
    LatencyHistogram h;
    const uint64_t n = LatencyHistogram::kExactLimit * 3;
    for (uint64_t i = n; i >= 1; --i) h.add(i * 1013 + 5);  // ~37 ms down to 1 us
    const double exact_p50 = static_cast<double>((n / 2) * 1013 + 5);
    const double exact_p99 = static_cast<double>(((n * 99 + 99) / 100) * 1013 + 5);
    const double exact_p1 = static_cast<double>(((n + 99) / 100) * 1013 + 5);
    EXPECT_NEAR(static_cast<double>(h.percentile(50)), exact_p50, exact_p50 * 0.01);
    EXPECT_NEAR(static_cast<double>(h.percentile(99)), exact_p99, exact_p99 * 0.01);
    EXPECT_NEAR(static_cast<double>(h.percentile(1)), exact_p1, exact_p1 * 0.01);
    EXPECT_EQ(h.min(), 1018u);
    EXPECT_EQ(h.max(), n * 1013 + 5);
}

}  // namespace
}  // namespace insert::exporter

namespace insert::exporter {
namespace {

Record acked_msg(const char* src, uint32_t qpn, uint64_t latency) {
    Record m = make_msg();
    m.msg.src_ip = *proto::IpAddress::parse(src);
    m.msg.dst_qpn = qpn;
    m.msg.t_first_ns = 0;
    m.msg.t_ack_ns = latency;
    return m;
}

Record evicted_part(const char* src, uint32_t qpn) {
    Record q = make_final_qp(1, 0);
    q.qp.qpn = qpn;
    q.qp.evicted = true;
    q.qp.transport = TransportFamily::rc;
    q.qp.src_ip = *proto::IpAddress::parse(src);
    return q;
}

long resident_kib() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * 4;
}

// docs/semantics.md "Sources": latencies are kept per part, so an evicted part reports its
// own messages whatever else the endpoint received, and in whatever order the workers'
// records arrive.
TEST(RecordWriter, an_evicted_part_reports_the_latencies_of_its_own_messages) {
    for (const bool stray_first : {false, true}) {
        std::vector<Record> seen;
        RecordWriter w(nullptr);
        w.set_observer([&](const Record& r) { seen.push_back(r); });
        Record victim = acked_msg("10.0.0.1", 34, 1000);
        Record stray = acked_msg("10.0.0.9", 34, 7000);
        w.write(stray_first ? stray : victim);
        w.write(stray_first ? victim : stray);
        Record gone = evicted_part("10.0.0.9", 34);
        w.write(gone);
        Record last = make_final_qp(1, 0);
        w.write(last);
        w.write_summary(SummaryCounts{});
        const auto qp = [&](bool evicted) {
            for (const Record& r : seen)
                if (r.type == RecordType::qp && r.qp.evicted == evicted) return r.qp;
            ADD_FAILURE() << "no qp record, evicted " << evicted;
            return QpRecord{};
        };
        EXPECT_EQ(qp(true).lat_count, 1u);
        EXPECT_EQ(qp(true).lat_max_ns, 7000u);
        EXPECT_EQ(qp(false).lat_count, 1u);  // the stray's latency went with its part
        EXPECT_EQ(qp(false).lat_max_ns, 1000u);
    }
}

// A `monitor` with idle eviction runs for months and must not grow by every distinct endpoint
// it has seen (~65 bytes each when the writer remembered them). A live writer keeps nothing
// for endpoints that are gone: no latency book entry, no record of having seen them.
TEST(RecordWriter, a_live_writer_keeps_nothing_for_evicted_endpoints) {
    RecordWriter w(nullptr);
    w.set_bounded_memory(true);
    const long before = resident_kib();
    constexpr uint32_t kEndpoints = 200'000;
    for (uint32_t i = 0; i < kEndpoints; ++i) {
        Record m = acked_msg("10.0.0.1", i, 1000 + i);
        w.write(m);
        Record q = evicted_part("10.0.0.1", i);
        q.qp.endpoint_gone = true;
        w.write(q);
    }
    EXPECT_EQ(w.endpoints().size(), 0u);
    EXPECT_EQ(w.endpoints().parts(), 0u);
    // 65 bytes each would be 12.7 MiB; the book's reused entries and table stay small.
    EXPECT_LT(resident_kib() - before, 4096) << "resident memory grew with the endpoints seen";
    // The summary counts the endpoint alive at the end and the lifetimes that ended.
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    w.set_output(f);
    Record alive = make_final_qp(1, 0);
    w.write(alive);
    w.write_summary(SummaryCounts{});
    ASSERT_TRUE(w.flush());
    const std::string all = read_all(f);
    std::fclose(f);
    EXPECT_NE(all.find("\"endpoints\":200001,"), std::string::npos) << all;
}

}  // namespace
}  // namespace insert::exporter

namespace insert::exporter {
namespace {

// An endpoint's parts are merged for its qp record: the same percentiles in any order, and
// the same as one histogram of every sample.
TEST(LatencyHistogram, merging_parts_gives_the_same_percentiles_in_any_order) {
    LatencyHistogram parts[3], all;
    uint64_t x = 12345;
    const std::size_t sizes[3] = {3000, 2500, 3};  // 5503 samples: spilled once merged
    for (int p = 0; p < 3; ++p)
        for (std::size_t i = 0; i < sizes[p]; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t v = 500 + (x >> 40) % (p == 0 ? 100000 : 3000);
            parts[p].add(v);
            all.add(v);
        }
    const int orders[][3] = {{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
    for (const auto& o : orders) {
        LatencyHistogram m;
        for (int i : o) m.merge(parts[i]);
        EXPECT_EQ(m.count(), all.count());
        EXPECT_EQ(m.max(), all.max());
        EXPECT_EQ(m.percentile(50), all.percentile(50));
        EXPECT_EQ(m.percentile(99), all.percentile(99));
    }
    // Small parts stay exact.
    LatencyHistogram a, b;
    a.add(10), a.add(30), b.add(20);
    a.merge(b);
    EXPECT_EQ(a.percentile(50), 20u);
    EXPECT_EQ(a.count(), 3u);
}

}  // namespace
}  // namespace insert::exporter
