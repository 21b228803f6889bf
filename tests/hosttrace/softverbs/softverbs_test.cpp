// In-process tests of softverbs through the public verbs API: two contexts on two
// loopback addresses (SOFTVERBS_IPS=127.0.0.1,127.0.0.2, set by meson) exchange real
// RoCEv2 over UDP. The binary links build/hosttrace/softverbs/libibverbs.so.1.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "hosttrace/softverbs/trace_ring.hpp"
#include "tests/hosttrace/softverbs/verbs_endpoint.hpp"

namespace insert::softverbs::test {
namespace {

constexpr int kDevA = 0;  // 127.0.0.1
constexpr int kDevB = 1;  // 127.0.0.2
constexpr std::size_t kBuf = 1 << 20;

void fill_pattern(uint8_t* p, std::size_t n, uint8_t seed) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed + i * 31 + (i >> 8));
}

struct Pair {
    Endpoint a, b;
    bool open(ibv_qp_type type, ibv_mtu mtu = IBV_MTU_1024, bool channel = false,
              uint8_t retry_cnt = 7, uint8_t rnr_retry = 7) {
        if (!a.open(kDevA, type, kBuf, channel) || !b.open(kDevB, type, kBuf, channel))
            return false;
        if (type == IBV_QPT_UD) return a.connect({}) && b.connect({});
        return a.connect(b.info(), mtu, 8, retry_cnt, rnr_retry) &&
               b.connect(a.info(), mtu, 8, retry_cnt, rnr_retry);
    }
};

TEST(SoftverbsDevice, one_device_per_address_with_an_active_roce_v2_port) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 2);
    ibv_context* ctx = ibv_open_device(list[1]);
    ASSERT_NE(ctx, nullptr);
    ibv_port_attr port;
    ASSERT_EQ(ibv_query_port(ctx, 1, &port), 0);
    EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
    EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
    EXPECT_EQ(port.active_mtu, IBV_MTU_4096);  // loopback's MTU is 64 KB
    ibv_gid_entry entry;
    ASSERT_EQ(ibv_query_gid_ex(ctx, 1, 0, &entry, 0), 0);
    EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_ROCE_V2);
    const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 2};
    EXPECT_EQ(std::memcmp(entry.gid.raw, want, 16), 0);
    ibv_device_attr attr;
    ASSERT_EQ(ibv_query_device(ctx, &attr), 0);
    EXPECT_EQ(attr.phys_port_cnt, 1);
    EXPECT_EQ(attr.atomic_cap, IBV_ATOMIC_HCA);
    EXPECT_EQ(ibv_close_device(ctx), 0);
    ibv_free_device_list(list);
}

TEST(SoftverbsDevice, ops_table_is_filled_like_a_provider_with_nop5_probe_sites) {
    Endpoint e;
    ASSERT_TRUE(e.open(kDevA, IBV_QPT_RC, 4096)) << e.error();
    ibv_context* ctx = e.ctx();
    ASSERT_NE(verbs_get_ctx(ctx), nullptr);
    EXPECT_NE(verbs_get_ctx_op(ctx, create_qp_ex), nullptr);
    EXPECT_NE(verbs_get_ctx_op(ctx, query_port), nullptr);
    const void* entries[] = {reinterpret_cast<const void*>(ctx->ops.post_send),
                             reinterpret_cast<const void*>(ctx->ops.post_recv),
                             reinterpret_cast<const void*>(ctx->ops.poll_cq),
                             reinterpret_cast<const void*>(ctx->ops.req_notify_cq)};
    // insert-trace attaches uprobes here; a 5-byte NOP lets the kernel optimise them.
    const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    for (const void* f : entries) {
        ASSERT_NE(f, nullptr);
        EXPECT_EQ(std::memcmp(f, nop5, 5), 0);
    }
}

TEST(SoftverbsDevice, exports_nop5_trace_site_for_insert_trace) {
    // insert-trace finds it by symbol (version SOFTVERBS_TRACE_2) and prefers it to the ops
    // entries: a 5-byte NOP and a return, called with batches of data-path records. Not
    // probed here, so softverbs records nothing (it checks the NOP's first byte).
    const uint8_t site[6] = {0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3};
    const void* f = dlvsym(RTLD_DEFAULT, "softverbs_trace_flush", "SOFTVERBS_TRACE_2");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(std::memcmp(f, site, sizeof(site)), 0);
    EXPECT_EQ(dlvsym(RTLD_DEFAULT, "softverbs_trace_post_send", "SOFTVERBS_TRACE_1"), nullptr);
}

// The per-thread ring behind the trace site (trace_ring.hpp): records go out oldest first,
// at most 16 per site call, each exactly once, also while another thread flushes.
namespace trace_ring_test {

using insert::softverbs::TraceRing;

void append(TraceRing& ring, uint64_t t) {
    sv_trace_rec& r = ring.next_slot();
    r = {};
    r.t_ns = t;
    r.u.send.wr_id = t;
    ring.publish();
}

}  // namespace trace_ring_test

TEST(SoftverbsTraceRing, flushes_oldest_first_in_batches_of_16) {
    using namespace trace_ring_test;
    auto ring = std::make_unique<TraceRing>(77, "some-thread-name-too-long");
    EXPECT_EQ(ring->tid(), 77u);
    EXPECT_STREQ(ring->comm(), "some-thread-nam");  // 15 characters and a NUL, like comm
    for (uint64_t i = 0; i < 40; i++) append(*ring, 1000 + i);
    EXPECT_EQ(ring->pending(), 40u);
    std::vector<uint32_t> sizes;
    std::vector<uint64_t> times;
    auto sink = [&](const sv_trace_rec* r, uint32_t n, const TraceRing& from) {
        EXPECT_EQ(&from, ring.get());
        sizes.push_back(n);
        for (uint32_t i = 0; i < n; i++) times.push_back(r[i].t_ns);
    };
    // Only when the oldest record is at least that old.
    EXPECT_EQ(ring->flush(sink, TraceRing::kNoWait, 999), 0u);
    EXPECT_EQ(ring->flush(sink, TraceRing::kNoWait, 1000), 40u);
    EXPECT_EQ(sizes, (std::vector<uint32_t>{16, 16, 8}));
    ASSERT_EQ(times.size(), 40u);
    for (uint64_t i = 0; i < 40; i++) EXPECT_EQ(times[i], 1000 + i);
    EXPECT_EQ(ring->pending(), 0u);
    EXPECT_EQ(ring->flush(sink, TraceRing::kNoWait), 0u);
    // Wrapping around the end of the slot array.
    for (uint64_t i = 0; i < TraceRing::kSlots; i++) append(*ring, 2000 + i);
    EXPECT_TRUE(ring->full());
    times.clear();
    EXPECT_EQ(ring->flush(sink, TraceRing::kWaitForever), TraceRing::kSlots);
    ASSERT_EQ(times.size(), TraceRing::kSlots);
    for (uint64_t i = 0; i < TraceRing::kSlots; i++) EXPECT_EQ(times[i], 2000 + i);
}

TEST(SoftverbsTraceRing, a_flush_inside_a_flush_gives_up_after_a_bounded_wait) {
    // exit() from a signal handler that interrupted a flush of the exiting thread's ring:
    // the exit's flush must not wait forever for the interrupted one.
    using namespace trace_ring_test;
    auto ring = std::make_unique<TraceRing>(1, "owner");
    append(*ring, 5);
    uint32_t inner = 99, outer_records = 0;
    auto inner_sink = [&](const sv_trace_rec*, uint32_t, const TraceRing&) { inner = 1000; };
    auto sink = [&](const sv_trace_rec*, uint32_t n, const TraceRing&) {
        outer_records += n;
        inner = ring->flush(inner_sink, TraceRing::kWaitBounded);
    };
    EXPECT_EQ(ring->flush(sink, TraceRing::kNoWait), 1u);
    EXPECT_EQ(outer_records, 1u);
    EXPECT_EQ(inner, 0u);
    EXPECT_EQ(ring->pending(), 0u);
}

TEST(SoftverbsTraceRing, owner_and_flusher_report_every_record_once_in_order) {
    using namespace trace_ring_test;
    constexpr uint64_t kRecords = 300000;
    auto ring = std::make_unique<TraceRing>(1, "owner");
    std::mutex m;  // the test's sink only; flushes are already serialised by the ring
    std::vector<uint64_t> seen;
    seen.reserve(kRecords);
    uint32_t largest = 0;
    auto sink = [&](const sv_trace_rec* r, uint32_t n, const TraceRing&) {
        std::lock_guard lock(m);
        largest = std::max(largest, n);
        for (uint32_t i = 0; i < n; i++) {
            EXPECT_EQ(r[i].u.send.wr_id, r[i].t_ns);  // never a half-written slot
            seen.push_back(r[i].t_ns);
        }
    };
    std::atomic<bool> stop{false};
    std::thread flusher([&] {
        while (!stop.load()) ring->flush(sink, TraceRing::kNoWait);
    });
    for (uint64_t i = 0; i < kRecords; i++) {
        if (ring->full())
            ring->flush(sink, TraceRing::kWaitForever);  // what softverbs' trace_slot does
        append(*ring, i);
        if (ring->pending() >= TraceRing::kFlushAt) ring->flush(sink, TraceRing::kNoWait);
    }
    stop = true;
    flusher.join();
    ring->flush(sink, TraceRing::kWaitForever);
    EXPECT_EQ(largest, TraceRing::kFlushAt);
    ASSERT_EQ(seen.size(), kRecords);
    for (uint64_t i = 0; i < kRecords; i++)
        if (seen[i] != i) FAIL() << "record " << i << " reported as " << seen[i];
}

TEST(SoftverbsQp, invalid_state_transitions_are_refused) {
    Endpoint e;
    ASSERT_TRUE(e.open(kDevA, IBV_QPT_RC, 4096)) << e.error();
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(e.qp(), &a, IBV_QP_STATE), EINVAL);  // INIT -> RTS
    a.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(ibv_modify_qp(e.qp(), &a, IBV_QP_STATE),
              EINVAL);  // RTR needs AV, MTU, dest QPN, rq PSN
    ibv_qp_init_attr init;
    ASSERT_EQ(ibv_query_qp(e.qp(), &a, 0, &init), 0);
    EXPECT_EQ(a.qp_state, IBV_QPS_INIT);
    EXPECT_EQ(e.post_send(IBV_WR_SEND, 0, 8, 0, 0, 1), EINVAL);  // not in RTS
}

TEST(SoftverbsRc, write_spanning_many_packets_lands_intact) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    const uint32_t len = 300000;  // 293 packets at 1 KB MTU
    fill_pattern(p.a.buf(), len, 7);
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, 0, len, p.b.info().addr + 100, p.b.info().rkey, 42),
              0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(wc.wr_id, 42u);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 100, len), 0);
}

TEST(SoftverbsRc, read_returns_remote_bytes) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC, IBV_MTU_4096)) << p.a.error() << p.b.error();
    const uint32_t len = 100001;
    fill_pattern(p.b.buf() + 8, len, 3);
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_READ, 16, len, p.b.info().addr + 8, p.b.info().rkey, 7), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
    EXPECT_EQ(wc.byte_len, len);
    EXPECT_EQ(std::memcmp(p.a.buf() + 16, p.b.buf() + 8, len), 0);
}

TEST(SoftverbsRc, send_with_immediate_fills_the_posted_receive) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    const uint32_t len = 5000;  // 5 packets
    ASSERT_EQ(p.b.post_recv(4096, 8192, 99), 0);
    fill_pattern(p.a.buf(), len, 11);
    ASSERT_EQ(p.a.post_send(IBV_WR_SEND_WITH_IMM, 0, len, 0, 0, 1, 0xCAFEF00D), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.b.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.wr_id, 99u);
    EXPECT_EQ(wc.byte_len, len);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
    EXPECT_EQ(ntohl(wc.imm_data), 0xCAFEF00Du);
    EXPECT_EQ(wc.qp_num, p.b.qp()->qp_num);
    EXPECT_EQ(wc.src_qp, p.a.qp()->qp_num);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 4096, len), 0);
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_SEND);
}

TEST(SoftverbsRc, write_with_immediate_consumes_a_receive) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.b.post_recv(0, 0, 5), 0);
    fill_pattern(p.a.buf(), 3000, 1);
    ASSERT_EQ(
        p.a.post_send(IBV_WR_RDMA_WRITE_WITH_IMM, 0, 3000, p.b.info().addr, p.b.info().rkey, 1, 77),
        0);
    ibv_wc wc;
    ASSERT_TRUE(p.b.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(wc.byte_len, 3000u);
    EXPECT_EQ(ntohl(wc.imm_data), 77u);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf(), 3000), 0);
}

TEST(SoftverbsRc, atomics_return_the_original_value) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    uint64_t* target = reinterpret_cast<uint64_t*>(p.b.buf() + 64);
    *target = 1000;
    ibv_wc wc;
    ASSERT_EQ(p.a.post_send(IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, p.b.info().addr + 64,
                            p.b.info().rkey, 1, 0, 5),
              0);
    ASSERT_TRUE(p.a.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_FETCH_ADD);
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(p.a.buf()), 1000u);
    EXPECT_EQ(*target, 1005u);
    // Compare fails: nothing swapped, original returned.
    ASSERT_EQ(p.a.post_send(IBV_WR_ATOMIC_CMP_AND_SWP, 8, 8, p.b.info().addr + 64, p.b.info().rkey,
                            2, 0, 1, 9),
              0);
    ASSERT_TRUE(p.a.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(*reinterpret_cast<uint64_t*>(p.a.buf() + 8), 1005u);
    EXPECT_EQ(*target, 1005u);
    // Compare matches: swapped.
    ASSERT_EQ(p.a.post_send(IBV_WR_ATOMIC_CMP_AND_SWP, 16, 8, p.b.info().addr + 64, p.b.info().rkey,
                            3, 0, 1005, 9),
              0);
    ASSERT_TRUE(p.a.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_COMP_SWAP);
    EXPECT_EQ(*target, 9u);
}

TEST(SoftverbsRc, bad_rkey_gives_remote_access_error_and_flushes) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, 0, 64, p.b.info().addr, p.b.info().rkey ^ 0x1, 1),
              0);
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, 0, 64, p.b.info().addr, p.b.info().rkey, 2), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    ibv_qp_attr a;
    ibv_qp_init_attr init;
    ASSERT_EQ(ibv_query_qp(p.a.qp(), &a, IBV_QP_STATE, &init), 0);
    EXPECT_EQ(a.qp_state, IBV_QPS_ERR);
}

TEST(SoftverbsRc, read_beyond_the_region_gives_remote_access_error) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    ASSERT_EQ(
        p.a.post_send(IBV_WR_RDMA_READ, 0, 4096, p.b.info().addr + kBuf - 100, p.b.info().rkey, 1),
        0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
}

TEST(SoftverbsRc, bad_lkey_gives_local_protection_error) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    ibv_sge sge{reinterpret_cast<uintptr_t>(p.a.buf()), 64, p.a.mr()->lkey + 0x100};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(p.a.qp(), &wr, &bad), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_LOC_PROT_ERR) << ibv_wc_status_str(wc.status);
}

TEST(SoftverbsRc, send_before_receive_is_retried_after_rnr_nak) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.a.post_send(IBV_WR_SEND, 0, 100, 0, 0, 1), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(p.b.post_recv(0, 100, 2), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.b.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

TEST(SoftverbsRc, rnr_retry_zero_gives_rnr_retry_exceeded) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC, IBV_MTU_1024, false, 7, 0)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.a.post_send(IBV_WR_SEND, 0, 100, 0, 0, 1), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR) << ibv_wc_status_str(wc.status);
}

TEST(SoftverbsRc, vanished_peer_gives_retry_exceeded) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC, IBV_MTU_1024, false, 2, 7)) << p.a.error() << p.b.error();
    p.b.destroy_qp();  // its packets now go to an unknown QPN and are dropped
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, 0, 64, p.b.info().addr, p.b.mr()->rkey, 1), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(wc.status);
}

TEST(SoftverbsRc, completion_channel_wakes_the_waiter) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC, IBV_MTU_1024, true)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.b.post_recv(0, 64, 3), 0);
    std::thread sender([&p] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        p.a.post_send(IBV_WR_SEND, 0, 64, 0, 0, 1);
    });
    ibv_wc wc;
    const bool got = p.b.wait_event(wc);
    sender.join();
    ASSERT_TRUE(got);
    EXPECT_EQ(wc.wr_id, 3u);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
}

TEST(SoftverbsRc, extended_post_send_api_posts_the_batch) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    // A second QP on A created through ibv_create_qp_ex, connected to a second QP on B.
    ibv_qp_init_attr_ex init{};
    init.send_cq = p.a.cq();
    init.recv_cq = p.a.cq();
    init.qp_type = IBV_QPT_RC;
    init.cap = {16, 16, 1, 1, 0};
    init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    init.pd = p.a.pd();
    init.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND;
    ibv_qp* qp = ibv_create_qp_ex(p.a.ctx(), &init);
    ASSERT_NE(qp, nullptr);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = Endpoint::kDefaultAccess;
    ASSERT_EQ(
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
    // Reuse B's QP: re-point it at the new QP (RESET -> INIT -> RTR -> RTS).
    a = {};
    a.qp_state = IBV_QPS_RESET;
    ASSERT_EQ(ibv_modify_qp(p.b.qp(), &a, IBV_QP_STATE), 0);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = Endpoint::kDefaultAccess;
    ASSERT_EQ(ibv_modify_qp(p.b.qp(), &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
              0);
    PeerInfo mine = p.a.info();
    mine.qpn = qp->qp_num;
    ASSERT_TRUE(p.b.connect(mine));
    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = p.b.qp()->qp_num;
    a.rq_psn = p.b.info().psn;
    a.max_dest_rd_atomic = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, p.b.info().gid, 16);
    ASSERT_EQ(ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
              0);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = mine.psn;
    a.timeout = 10;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    ASSERT_EQ(ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
              0);
    fill_pattern(p.a.buf(), 2048, 5);
    ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
    ibv_wr_start(qpx);
    qpx->wr_id = 10;
    qpx->wr_flags = 0;
    ibv_wr_rdma_write(qpx, p.b.info().rkey, p.b.info().addr);
    ibv_wr_set_sge(qpx, p.a.mr()->lkey, reinterpret_cast<uintptr_t>(p.a.buf()), 1024);
    qpx->wr_id = 11;
    qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(qpx, p.b.info().rkey, p.b.info().addr + 1024);
    ibv_wr_set_sge(qpx, p.a.mr()->lkey, reinterpret_cast<uintptr_t>(p.a.buf() + 1024), 1024);
    ASSERT_EQ(ibv_wr_complete(qpx), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.wr_id, 11u);  // only the signaled one completes
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf(), 2048), 0);
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST(SoftverbsRc, shared_receive_queue_feeds_the_qp) {
    Endpoint a;
    ASSERT_TRUE(a.open(kDevA, IBV_QPT_RC, kBuf)) << a.error();
    // B: a QP whose receives come from an SRQ.
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_GE(n, 2);
    ibv_context* ctx = ibv_open_device(list[kDevB]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx, nullptr);
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
    std::vector<uint8_t> buf(8192);
    ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ibv_srq_init_attr sattr{};
    sattr.attr.max_wr = 8;
    sattr.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(pd, &sattr);
    ASSERT_NE(srq, nullptr);
    ibv_qp_init_attr init{};
    init.send_cq = cq;
    init.recv_cq = cq;
    init.srq = srq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 4;
    init.cap.max_send_sge = 1;
    ibv_qp* qp = ibv_create_qp(pd, &init);
    ASSERT_NE(qp, nullptr);
    ibv_qp_attr qa{};
    qa.qp_state = IBV_QPS_INIT;
    qa.port_num = 1;
    qa.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    ASSERT_EQ(ibv_modify_qp(qp, &qa,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
              0);
    qa = {};
    qa.qp_state = IBV_QPS_RTR;
    qa.path_mtu = IBV_MTU_1024;
    qa.dest_qp_num = a.qp()->qp_num;
    qa.rq_psn = a.info().psn;
    qa.ah_attr.is_global = 1;
    qa.ah_attr.port_num = 1;
    std::memcpy(qa.ah_attr.grh.dgid.raw, a.info().gid, 16);
    ASSERT_EQ(
        ibv_modify_qp(qp, &qa,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN),
        0);
    qa = {};
    qa.qp_state = IBV_QPS_RTS;
    qa.sq_psn = 0;
    ASSERT_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    PeerInfo b_info{qp->qp_num, 0, 0, 0, {}};
    ibv_gid gid;
    ibv_query_gid(ctx, 1, 0, &gid);
    std::memcpy(b_info.gid, gid.raw, 16);
    ASSERT_TRUE(a.connect(b_info, IBV_MTU_1024));
    // Plain post_recv is refused on a QP that has an SRQ.
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), 4096, mr->lkey};
    ibv_recv_wr rwr{};
    rwr.wr_id = 77;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_recv(qp, &rwr, &bad), EINVAL);
    ASSERT_EQ(ibv_post_srq_recv(srq, &rwr, &bad), 0);
    fill_pattern(a.buf(), 3000, 2);
    ASSERT_EQ(a.post_send(IBV_WR_SEND, 0, 3000, 0, 0, 1), 0);
    ibv_wc wc{};
    bool got = false;
    for (int i = 0; i < 2000000 && !got; ++i) got = ibv_poll_cq(cq, 1, &wc) == 1;
    ASSERT_TRUE(got);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.wr_id, 77u);
    EXPECT_EQ(wc.byte_len, 3000u);
    EXPECT_EQ(std::memcmp(a.buf(), buf.data(), 3000), 0);
    ibv_srq_attr q{};
    ASSERT_EQ(ibv_query_srq(srq, &q), 0);
    EXPECT_EQ(q.max_wr, 8u);
    EXPECT_EQ(ibv_destroy_srq(srq), EBUSY);  // still used by the QP
    EXPECT_EQ(ibv_destroy_qp(qp), 0);
    EXPECT_EQ(ibv_destroy_srq(srq), 0);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    EXPECT_EQ(ibv_destroy_cq(cq), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(SoftverbsUc, send_and_write_with_immediate_arrive_without_acks) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_UC)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.b.post_recv(0, 8192, 1), 0);
    ASSERT_EQ(p.b.post_recv(0, 0, 2), 0);
    fill_pattern(p.a.buf(), 6000, 4);
    ASSERT_EQ(p.a.post_send(IBV_WR_SEND, 0, 6000, 0, 0, 10), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.a.wait(wc));  // completes once sent: UC has no ACKs
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    ASSERT_TRUE(p.b.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 6000u);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf(), 6000), 0);
    ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE_WITH_IMM, 0, 3000, p.b.info().addr + 10000,
                            p.b.info().rkey, 11, 5),
              0);
    ASSERT_TRUE(p.b.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 10000, 3000), 0);
    // READ is not a UC operation.
    EXPECT_EQ(p.a.post_send(IBV_WR_RDMA_READ, 0, 64, p.b.info().addr, p.b.info().rkey, 12), EINVAL);
}

TEST(SoftverbsUd, datagram_arrives_behind_a_grh_with_the_sender_address) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_UD)) << p.a.error() << p.b.error();
    ASSERT_EQ(p.b.post_recv(0, 40 + 1024, 8), 0);
    ibv_ah_attr ah_attr{};
    ah_attr.is_global = 1;
    ah_attr.port_num = 1;
    std::memcpy(ah_attr.grh.dgid.raw, p.b.info().gid, 16);
    ibv_ah* ah = ibv_create_ah(p.a.pd(), &ah_attr);
    ASSERT_NE(ah, nullptr);
    fill_pattern(p.a.buf(), 1000, 9);
    ASSERT_EQ(p.a.post_ud_send(ah, p.b.qp()->qp_num, 0, 1000, 4), 0);
    ibv_wc wc;
    ASSERT_TRUE(p.b.wait(wc));
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.byte_len, 1040u);
    EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
    EXPECT_EQ(wc.src_qp, p.a.qp()->qp_num);
    EXPECT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 40, 1000), 0);
    const uint8_t sender[4] = {127, 0, 0, 1};
    EXPECT_EQ(std::memcmp(p.b.buf() + 20 + 12, sender, 4), 0);  // IPv4 source in the GRH
    ASSERT_TRUE(p.a.wait(wc));
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

// Fault injection is read when a device is opened: set it for these tests only. Values
// already in the environment win, so other loss rates and seeds can be tried by hand.
class SoftverbsLoss : public ::testing::Test {
  protected:
    void SetUp() override {
        setenv("SOFTVERBS_DROP", "0.03", 0);
        setenv("SOFTVERBS_REORDER", "0.02", 0);
        setenv("SOFTVERBS_SEED", "12345", 0);  // an outer SOFTVERBS_SEED wins, to try others
    }
    void TearDown() override {
        unsetenv("SOFTVERBS_DROP");
        unsetenv("SOFTVERBS_REORDER");
        unsetenv("SOFTVERBS_SEED");
    }
};

TEST_F(SoftverbsLoss, writes_reads_and_sends_complete_intact_despite_loss_and_reordering) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC)) << p.a.error() << p.b.error();
    const uint32_t len = 200000;
    ibv_wc wc;
    for (int round = 0; round < 5; ++round) {
        fill_pattern(p.a.buf(), len, static_cast<uint8_t>(round));
        ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, 0, len, p.b.info().addr, p.b.info().rkey, round),
                  0);
        ASSERT_TRUE(p.a.wait(wc, std::chrono::seconds(20)));
        ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        ASSERT_EQ(std::memcmp(p.a.buf(), p.b.buf(), len), 0);
        fill_pattern(p.b.buf() + len, len, static_cast<uint8_t>(round + 100));
        ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_READ, len, len, p.b.info().addr + len, p.b.info().rkey,
                                round),
                  0);
        ASSERT_TRUE(p.a.wait(wc, std::chrono::seconds(20)));
        ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
        ASSERT_EQ(std::memcmp(p.a.buf() + len, p.b.buf() + len, len), 0);
        ASSERT_EQ(p.b.post_recv(2 * len, 20000, round), 0);
        ASSERT_EQ(p.a.post_send(IBV_WR_SEND, 0, 20000, 0, 0, round), 0);
        ASSERT_TRUE(p.b.wait(wc, std::chrono::seconds(20)));
        ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
        ASSERT_EQ(wc.byte_len, 20000u);
        ASSERT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 2 * len, 20000), 0);
        ASSERT_TRUE(p.a.wait(wc, std::chrono::seconds(20)));
        ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    }
}

TEST_F(SoftverbsLoss, mixed_outstanding_work_survives_loss_and_reordering) {
    Pair p;
    ASSERT_TRUE(p.open(IBV_QPT_RC, IBV_MTU_4096)) << p.a.error() << p.b.error();
    constexpr uint32_t kChunk = 65536;
    uint64_t* counter = reinterpret_cast<uint64_t*>(p.b.buf() + kBuf - 8);
    *counter = 0;
    for (int round = 0; round < 20; ++round) {
        // B's memory: [0, 4 chunks) written by A, [4, 8) read by A; A's: [0,4) source,
        // [4,8) READ destination, 8 recv area on B.
        fill_pattern(p.a.buf(), 4 * kChunk, static_cast<uint8_t>(round));
        fill_pattern(p.b.buf() + 4 * kChunk, 4 * kChunk, static_cast<uint8_t>(round + 50));
        for (int i = 0; i < 2; ++i)
            ASSERT_EQ(p.b.post_recv(8 * kChunk + i * 8192, 8192, 100 + i), 0);
        int posted = 0;
        for (int i = 0; i < 4; ++i) {
            ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_WRITE, i * kChunk, kChunk,
                                    p.b.info().addr + i * kChunk, p.b.info().rkey, posted++),
                      0);
            ASSERT_EQ(p.a.post_send(IBV_WR_RDMA_READ, (4 + i) * kChunk, kChunk,
                                    p.b.info().addr + (4 + i) * kChunk, p.b.info().rkey, posted++),
                      0);
        }
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(p.a.post_send(IBV_WR_ATOMIC_FETCH_AND_ADD, 9 * kChunk + i * 8, 8,
                                    p.b.info().addr + kBuf - 8, p.b.info().rkey, posted++, 0, 1),
                      0);
            ASSERT_EQ(p.a.post_send(IBV_WR_SEND, i * 8192, 8192, 0, 0, posted++), 0);
        }
        for (int i = 0; i < posted; ++i) {
            ibv_wc wc;
            ASSERT_TRUE(p.a.wait(wc, std::chrono::seconds(20)))
                << "round " << round << " completion " << i;
            ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
            ASSERT_EQ(wc.wr_id, static_cast<uint64_t>(i));  // completions in posting order
        }
        for (int i = 0; i < 2; ++i) {
            ibv_wc wc;
            ASSERT_TRUE(p.b.wait(wc, std::chrono::seconds(20)));
            ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
            ASSERT_EQ(wc.byte_len, 8192u);
        }
        ASSERT_EQ(std::memcmp(p.a.buf(), p.b.buf(), 4 * kChunk), 0) << "round " << round;
        ASSERT_EQ(std::memcmp(p.a.buf() + 4 * kChunk, p.b.buf() + 4 * kChunk, 4 * kChunk), 0);
        ASSERT_EQ(std::memcmp(p.a.buf(), p.b.buf() + 8 * kChunk, 2 * 8192), 0);
    }
    EXPECT_EQ(*counter, 40u);  // each FETCH_ADD applied exactly once despite retransmission
}

}  // namespace
}  // namespace insert::softverbs::test
