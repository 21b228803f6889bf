// The ring between insert-gen's pipeline threads: every consumer sees every item, in
// order, whatever the relative speed of the threads; a full ring holds the producer back;
// a consumer of two rings sharing a doorbell sees both streams to the end. The packets
// cross it packed (ring_packet.hpp): unpacking gives back every field the consumers read.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include "bench/gen/broadcast_ring.hpp"
#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/ring_packet.hpp"
#include "bench/gen/simulator.hpp"

namespace insert::gen {
namespace {

constexpr uint64_t kItems = 300'000;

// Consumer `c` checks the sequence; `slow` makes it yield now and then so that the
// producer fills the ring and has to wait for it.
uint64_t consume(BroadcastRing<uint64_t>& ring, unsigned c, bool slow) {
    uint64_t expect = 0, bad = 0, spans = 0;
    for (;;) {
        const auto items = ring.acquire(c);
        if (items.empty()) break;
        for (uint64_t v : items) bad += v != expect++;
        if (slow && ++spans % 8 == 0) std::this_thread::yield();
        ring.release(c, items.size());
    }
    return bad + (expect != kItems);
}

TEST(BroadcastRing, every_consumer_sees_every_item_in_order) {
    for (std::size_t capacity : {64u, 1024u, 16384u}) {
        BroadcastRing<uint64_t> ring(capacity, 16, 2);
        uint64_t errors[2] = {1, 1};
        std::thread fast([&] { errors[0] = consume(ring, 0, false); });
        std::thread slow([&] { errors[1] = consume(ring, 1, true); });
        for (uint64_t i = 0; i < kItems; ++i) {
            ring.slot() = i;
            ring.commit();
        }
        ring.close();
        fast.join();
        slow.join();
        EXPECT_EQ(errors[0], 0u) << capacity;
        EXPECT_EQ(errors[1], 0u) << capacity;
    }
}

TEST(BroadcastRing, two_rings_one_doorbell) {
    std::atomic<uint32_t> doorbell{0};
    BroadcastRing<uint64_t> a(256, 8, 1, &doorbell), b(512, 32, 1, &doorbell);
    uint64_t next[2] = {0, 0}, bad = 0;
    std::thread consumer([&] {
        BroadcastRing<uint64_t>* rings[2] = {&a, &b};
        for (;;) {
            const uint32_t seen = doorbell.load(std::memory_order_acquire);
            bool idle = true;
            for (int r = 0; r < 2; ++r) {
                const auto items = rings[r]->try_acquire(0);
                for (uint64_t v : items) bad += v != next[r]++;
                if (!items.empty()) rings[r]->release(0, items.size()), idle = false;
            }
            if (!idle) continue;
            if (a.drained(0) && b.drained(0)) break;
            doorbell.wait(seen, std::memory_order_acquire);
        }
    });
    std::thread producer_b([&] {
        for (uint64_t i = 0; i < kItems; ++i) {
            b.slot() = i;
            b.commit();
        }
        b.close();
    });
    for (uint64_t i = 0; i < kItems / 3; ++i) {
        a.slot() = i;
        a.commit();
    }
    a.close();
    producer_b.join();
    consumer.join();
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(next[0], kItems / 3);
    EXPECT_EQ(next[1], kItems);
}

// Every field of a SimPacket but the simulation-only ones (drops, swap, spray delay).
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

class RoundTrip : public ObservedSink {
  public:
    void observe(const SimPacket& p) override {
        RingPacket r;
        pack(p, r);
        SimPacket back;
        // unpack() assigns every field: start from garbage (as a reused slot would be).
        std::memset(static_cast<void*>(&back), 0xA5, sizeof back);
        unpack(r, back);
        ++packets;
        differ += !same_observed(p, back);
    }
    uint64_t packets = 0, differ = 0;
};

TEST(RingPacket, every_builtin_scenario_round_trips) {
    ScaleOptions opts;
    opts.scale = 0.25;
    opts.qps = 300;
    opts.packets = 3000;
    for (const std::string& name : builtin_names()) {
        const auto scenario = builtin_scenario(name, opts);
        ASSERT_TRUE(scenario) << name;
        Simulator sim(*scenario, 2);
        RoundTrip sink;
        sim.run(sink);
        EXPECT_GT(sink.packets, 0u) << name;
        EXPECT_EQ(sink.differ, 0u) << name;
    }
}

}  // namespace
}  // namespace insert::gen
