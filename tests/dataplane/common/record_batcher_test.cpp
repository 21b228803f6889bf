// Records into the bus's messages (dataplane/common/record_batcher.hpp, docs/scale-out.md
// "Messages"): per partition, whole lines in order, sealed at the size bound, after the
// linger or at the end, numbered 1, 2, ... per partition; the sink's bound drops and counts.
#include "dataplane/common/record_batcher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace insert {
namespace {

using namespace std::chrono_literals;
using Clock = RecordBatcher::Clock;

class Sink : public BatchSink {
  public:
    std::size_t limit = ~std::size_t{0};
    std::size_t held = 0;
    std::vector<RecordBatch> batches;

    bool room(std::size_t bytes, std::size_t open_bytes) override {
        return held + open_bytes + bytes <= limit;
    }
    void sealed(RecordBatch&& b) override {
        held += b.body.size();
        batches.push_back(std::move(b));
    }
    // Every sealed batch's lines, per partition, in sequence order.
    std::map<uint32_t, std::string> by_partition() const {
        std::map<uint32_t, std::string> out;
        std::map<uint32_t, uint64_t> next;
        for (const RecordBatch& b : batches) {
            EXPECT_EQ(b.seq, ++next[b.partition]) << "partition " << b.partition;
            out[b.partition] += b.body;
        }
        return out;
    }
};

std::string msg(int src, int dst, int n) {
    return R"({"type":"msg","src_ip":"10.0.0.)" + std::to_string(src) + R"(","dst_ip":"10.0.0.)" +
           std::to_string(dst) + R"(","n":)" + std::to_string(n) + "}\n";
}

TEST(RecordBatcher, lines_go_whole_to_their_partitions_in_order) {
    const HostPartitions parts(8, nullptr);
    RecordBatcher batcher(parts, 1 << 16, 100ms);
    Sink sink;
    const auto t0 = Clock::now();
    const std::string a = msg(1, 2, 1), b = msg(3, 3, 2);
    const std::string summary = "{\"type\":\"summary\",\"pkts\":1}\n";
    // Cut anywhere: in the middle of a line, between two, within a newline's neighbourhood.
    const std::string all = a + b + summary;
    batcher.write(std::string_view(all).substr(0, 10), t0, sink);
    batcher.write(std::string_view(all).substr(10, a.size()), t0, sink);
    batcher.write(std::string_view(all).substr(10 + a.size()), t0, sink);
    EXPECT_TRUE(sink.batches.empty());  // nothing full, nothing old
    batcher.seal_all(sink, true);
    const auto got = sink.by_partition();
    ASSERT_EQ(got.size(), 8u);  // the summary goes to every partition
    for (uint32_t k = 0; k < 8; ++k) {
        std::string want;
        if (k == parts.of_ip("10.0.0.1") || k == parts.of_ip("10.0.0.2")) want += a;
        if (k == parts.of_ip("10.0.0.3")) want += b;
        want += summary;
        EXPECT_EQ(got.at(k), want) << "partition " << k;
    }
    const RecordBatcher::Counts c = batcher.counts();
    EXPECT_EQ(c.records, 2u + 1u + 8u);
    EXPECT_EQ(c.batches, 8u);
    EXPECT_EQ(c.dropped, 0u);
    EXPECT_EQ(batcher.open_bytes(), 0u);
}

TEST(RecordBatcher, sealed_at_the_size_bound_and_numbered) {
    RecordBatcher batcher(HostPartitions(1, nullptr), 1000, 1h);
    Sink sink;
    std::string text;
    for (int i = 0; i < 100; ++i) text += msg(1, 2, i);  // 62-63 bytes each
    batcher.write(text, Clock::now(), sink);
    ASSERT_GE(sink.batches.size(), 6u);
    for (const RecordBatch& b : sink.batches) {
        EXPECT_LE(b.body.size(), 1000u);
        EXPECT_GT(b.body.size() + msg(1, 2, 99).size(), 1000u) << "sealed before it was full";
        EXPECT_EQ(b.records, static_cast<uint32_t>(std::count(b.body.begin(), b.body.end(), '\n')));
    }
    batcher.seal_all(sink, true);
    EXPECT_EQ(sink.by_partition().at(0), text);
    // A line longer than the bound travels alone.
    const std::string big = "{\"type\":\"x\",\"pad\":\"" + std::string(3000, 'p') + "\"}\n";
    batcher.write(big, Clock::now(), sink);
    EXPECT_EQ(sink.batches.back().body, big);
    EXPECT_EQ(sink.batches.back().records, 1u);
}

TEST(RecordBatcher, sealed_once_the_first_line_is_linger_old) {
    RecordBatcher batcher(HostPartitions(2, nullptr), 1 << 16, 100ms);
    Sink sink;
    const auto t0 = Clock::now();
    batcher.write("{\"type\":\"summary\"}\n", t0, sink);
    batcher.seal_aged(t0 + 99ms, sink);
    EXPECT_TRUE(sink.batches.empty());
    batcher.write("{\"type\":\"summary\"}\n", t0 + 50ms, sink);  // does not restart the clock
    batcher.seal_aged(t0 + 100ms, sink);
    ASSERT_EQ(sink.batches.size(), 2u);
    EXPECT_EQ(sink.batches[0].records, 2u);
}

TEST(RecordBatcher, no_room_drops_and_counts_each_copy) {
    RecordBatcher batcher(HostPartitions(4, nullptr), 1 << 16, 100ms);
    Sink sink;
    const std::string summary = "{\"type\":\"summary\"}\n";
    sink.limit = 2 * summary.size();  // two copies of four fit
    batcher.write(summary, Clock::now(), sink);
    EXPECT_EQ(batcher.counts().records, 2u);
    EXPECT_EQ(batcher.counts().dropped, 2u);
    // A line never ended is dropped at the end, once.
    batcher.write("{\"type\":\"summ", Clock::now(), sink);
    batcher.seal_all(sink, true);
    EXPECT_EQ(batcher.counts().dropped, 3u);
    EXPECT_EQ(sink.batches.size(), 2u);
}

}  // namespace
}  // namespace insert
