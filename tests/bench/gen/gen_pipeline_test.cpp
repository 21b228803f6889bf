// The simulator run in pieces (Simulator::run_for(), what run_threaded()'s input stage
// does, a batch at a time) hands out the same packets, in the same order, as run() in one
// go, stops within one packet of each piece's count, and says when it is complete.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/simulator.hpp"

namespace insert::gen {
namespace {

// Every field of a SimPacket the truth and the frames read (not the simulation-only ones).
bool same_observed(const SimPacket& a, const SimPacket& b) {
    const proto::TransportHeaders &s = a.t, &t = b.t;
    const bool bth =
        s.bth.opcode == t.bth.opcode && s.bth.se == t.bth.se && s.bth.migreq == t.bth.migreq &&
        s.bth.pad == t.bth.pad && s.bth.tver == t.bth.tver && s.bth.pkey == t.bth.pkey &&
        s.bth.fecn == t.bth.fecn && s.bth.becn == t.bth.becn && s.bth.dest_qp == t.bth.dest_qp &&
        s.bth.ack_req == t.bth.ack_req && s.bth.psn == t.bth.psn;
    const bool ext = s.ext == t.ext && s.xrc_srqn == t.xrc_srqn && s.deth.qkey == t.deth.qkey &&
                     s.deth.src_qp == t.deth.src_qp && s.reth.va == t.reth.va &&
                     s.reth.rkey == t.reth.rkey && s.reth.dma_len == t.reth.dma_len &&
                     s.atomic.va == t.atomic.va && s.atomic.rkey == t.atomic.rkey &&
                     s.atomic.swap_add == t.atomic.swap_add &&
                     s.atomic.compare == t.atomic.compare && s.aeth.syndrome == t.aeth.syndrome &&
                     s.aeth.msn == t.aeth.msn && s.atomic_ack == t.atomic_ack && s.imm == t.imm &&
                     s.ieth_rkey == t.ieth_rkey;
    const bool rest = a.t_ns == b.t_ns && a.cls == b.cls && a.variant == b.variant &&
                      a.ecn == b.ecn && a.dscp == b.dscp && a.src_host == b.src_host &&
                      a.dst_host == b.dst_host && a.sport == b.sport &&
                      a.payload_len == b.payload_len && a.msg_uid == b.msg_uid &&
                      a.conn == b.conn && a.index == b.index && a.retx == b.retx && a.cm == b.cm &&
                      a.cm_local_id == b.cm_local_id && a.cm_remote_id == b.cm_remote_id &&
                      a.cm_qpn == b.cm_qpn && a.cm_psn == b.cm_psn && a.dir == b.dir;
    return bth && ext && rest;
}

class Keep : public ObservedSink {
  public:
    void observe(const SimPacket& p) override { packets.push_back(p); }
    std::vector<SimPacket> packets;
};

TEST(RunFor, pieces_give_the_packets_of_one_run) {
    ScaleOptions opts;
    opts.scale = 0.25;
    opts.qps = 300;
    opts.packets = 3000;
    for (const std::string& name : builtin_names()) {
        const auto scenario = builtin_scenario(name, opts);
        ASSERT_TRUE(scenario) << name;
        Simulator whole(*scenario, 2);
        Keep want;
        whole.run(want);
        ASSERT_GT(want.packets.size(), 0u) << name;
        for (uint64_t piece : {1u, 7u, 2048u}) {
            Simulator sim(*scenario, 2);
            Keep got;
            bool complete = false;
            uint64_t calls = 0;
            while (!complete) {
                const std::size_t before = got.packets.size();
                complete = sim.run_for(got, piece);
                ++calls;
                ASSERT_LE(got.packets.size() - before, piece + 1) << name;
                if (!complete) {
                    ASSERT_GE(got.packets.size() - before, piece) << name;
                }
                ASSERT_LT(calls, want.packets.size() + 2) << name;
            }
            ASSERT_EQ(got.packets.size(), want.packets.size()) << name << " piece " << piece;
            uint64_t differ = 0;
            for (std::size_t i = 0; i < want.packets.size(); ++i)
                differ += !same_observed(want.packets[i], got.packets[i]);
            EXPECT_EQ(differ, 0u) << name << " piece " << piece;
            EXPECT_EQ(sim.stats().end_ns, whole.stats().end_ns) << name;
            EXPECT_EQ(sim.stats().events, whole.stats().events) << name;
        }
    }
}

}  // namespace
}  // namespace insert::gen
