// The top-QP board behind /insert/top_qps and the live view (no EAL).
#include <gtest/gtest.h>

#include "dataplane/pipeline/qp_board.hpp"

namespace insert::pipeline {
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
    bool push(const state::Record&) override { return ++n, true; }
    unsigned n = 0;
};

TEST(QpBoard, the_engine_factory_wraps_each_sink_and_forwards_every_record) {
    QpBoards boards(2);
    boards.install();
    CountingSink ring0, ring1;
    std::string error;
    state::EngineConfig cfg;
    cfg.max_endpoints = 64;
    auto e0 = QpBoards::make_engine_with_board(cfg, ring0, error);
    auto e1 = QpBoards::make_engine_with_board(cfg, ring1, error);
    boards.uninstall();
    ASSERT_TRUE(e0 && e1) << error;
    // A record pushed through the engine's sink reaches the ring and the board.
    state::Record r;
    r.type = state::RecordType::qp;
    r.qp = qp(7, 42, 1234);
    // The engine holds the BoardSink: emit through a report of an empty engine (no
    // endpoints: no records), then check the board path directly through finish() of a
    // real packet is covered by the netns tests; here the sink chain itself.
    BoardSink sink;
    sink.inner = &ring0;
    EXPECT_TRUE(sink.push(r));
    EXPECT_EQ(ring0.n, 1u);
    ASSERT_EQ(sink.board.snapshot().size(), 1u);
    EXPECT_EQ(sink.board.snapshot()[0].qpn, 42u);
}

}  // namespace
}  // namespace insert::pipeline
