// The top-QP board behind /insert/top_qps and the live view (no EAL).
#include <gtest/gtest.h>

#include <array>

#include "dataplane/live/qp_board.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::live {
namespace {

state::QpRecord qp(uint32_t ip, uint32_t qpn, uint64_t bytes) {
    state::QpRecord r;
    r.ip = proto::IpAddress::v4(ip);
    r.qpn = qpn;
    r.bytes = bytes;
    return r;
}

TEST(QpBoard, keeps_the_busiest_endpoints_and_updates_in_place) {
    QpBoard b;
    for (uint32_t i = 0; i < 100; ++i) b.offer(qp(1, i, i * 10));
    auto s = b.snapshot();
    ASSERT_EQ(s.size(), QpBoard::kTop);
    for (const auto& r : s) EXPECT_GE(r.qpn, 100 - QpBoard::kTop);
    b.offer(qp(1, 99, 5000));  // same endpoint, newer report
    s = b.snapshot();
    EXPECT_EQ(s.size(), QpBoard::kTop);
    EXPECT_EQ(
        std::count_if(s.begin(), s.end(), [](auto& r) { return r.qpn == 99 && r.bytes == 5000; }),
        1);
}

class CountingSink final : public state::RecordSink {
  public:
    // Records, not the workers' event-window marks (each engine's finish() pushes one).
    bool push(const state::Record& r) override {
        if (r.type != state::RecordType::mark) ++n;
        return true;
    }
    unsigned n = 0;
};

TEST(QpBoard, the_engine_factory_wraps_each_workers_sink_and_forwards_every_record) {
    QpBoards boards(2);
    auto make = boards.factory();
    CountingSink ring0, ring1;
    std::string error;
    state::EngineConfig cfg;
    cfg.max_endpoints = 64;
    auto e0 = make(cfg, ring0, error);
    auto e1 = make(cfg, ring1, error);
    ASSERT_TRUE(e0 && e1) << error;
    EXPECT_EQ(make(cfg, ring0, error), nullptr) << "a third engine for two boards";
    // One SEND to worker 1's engine: its final qp record reaches ring 1 and the boards.
    proto::FrameSpec f;
    f.src_ip = proto::IpAddress::v4(0x0A000001);
    f.dst_ip = proto::IpAddress::v4(0x0A000002);
    f.t.bth.opcode = 0x04;  // RC SEND Only
    f.t.bth.dest_qp = 42;
    f.payload_len = 1000;
    std::array<uint8_t, 2048> frame{};
    const std::size_t n = proto::build_frame(f, frame);
    proto::ParsedPacket p;
    ASSERT_EQ(proto::parse_frame({frame.data(), n}, p), proto::Verdict::roce);
    e1->process(p, 1000);
    e0->finish(2000);
    e1->finish(2000);
    EXPECT_EQ(ring0.n, 0u);
    EXPECT_EQ(ring1.n, 2u);  // the message (never acknowledged), the final qp record
    const auto top = boards.top(16);
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top[0].qpn, 42u);
    EXPECT_EQ(top[0].bytes, 1000u);
}

}  // namespace
}  // namespace insert::live
