// The worker->exporter record ring (pipeline/record_ring.hpp): records arrive in order; a
// full ring refuses a record (drop policy: the engine counts it in records_dropped) or
// waits for the exporter (wait policy) unless the exporter is gone. rte_ring needs EAL: the
// binary starts it as the tools do, through EalSession (4 KB pages, a file prefix of its
// own, no PCI), and removes its runtime directory at the end.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/record_ring.hpp"

namespace insert {
namespace {

state::Record numbered(uint32_t n) {
    state::Record r;
    r.type = state::RecordType::msg;
    r.msg.dst_qpn = n;
    return r;
}

std::vector<uint32_t> drain(pipeline::RecordRing& ring) {
    std::vector<uint32_t> out;
    state::Record buf[8];
    while (const unsigned n = ring.pop(buf, 8))
        for (unsigned i = 0; i < n; ++i) out.push_back(buf[i].msg.dst_qpn);
    return out;
}

std::vector<uint32_t> range(uint32_t from, uint32_t to) {
    std::vector<uint32_t> v;
    for (uint32_t i = from; i < to; ++i) v.push_back(i);
    return v;
}

TEST(RecordRing, a_full_ring_with_drop_policy_refuses_records_and_keeps_the_order) {
    std::string error;
    // A 16-slot rte_ring holds 15 elements.
    auto ring = pipeline::RecordRing::create("rr_drop", 16, pipeline::FullPolicy::drop, error);
    ASSERT_TRUE(ring) << error;
    unsigned refused = 0;
    for (uint32_t i = 0; i < 20; ++i) refused += ring->push(numbered(i)) ? 0 : 1;
    EXPECT_EQ(refused, 5u);
    EXPECT_EQ(ring->full_events(), 5u);
    EXPECT_EQ(drain(*ring), range(0, 15));
    EXPECT_TRUE(ring->empty());
    EXPECT_TRUE(ring->push(numbered(99)));  // room again
    EXPECT_EQ(drain(*ring), std::vector<uint32_t>{99});
}

TEST(RecordRing, a_waiting_producer_gives_up_when_the_exporter_is_gone) {
    std::string error;
    auto ring = pipeline::RecordRing::create("rr_wait", 16, pipeline::FullPolicy::wait, error);
    ASSERT_TRUE(ring) << error;
    for (uint32_t i = 0; i < 15; ++i) EXPECT_TRUE(ring->push(numbered(i)));
    ring->close();
    EXPECT_FALSE(ring->push(numbered(15)));  // returns instead of waiting forever
    EXPECT_EQ(drain(*ring), range(0, 15));
}

}  // namespace
}  // namespace insert

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    insert::pipeline::EalRequest request;
    request.lcores = 1;
    request.memory_bytes = 64u << 20;
    request.tool = "record_ring_test";
    request.user_args = {"--no-huge"};
    insert::pipeline::EalSession eal;
    std::string error;
    if (!eal.start(request, error)) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 1;
    }
    const int rc = RUN_ALL_TESTS();
    eal.stop();
    return rc;
}
