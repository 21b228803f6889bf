// The periodic report (Engine::report): each live endpoint's `qp` record as it was at the
// boundary, taken lazily - before the first change to the endpoint, or by a sweep of a few
// slots per burst - so that no call does work in proportion to the endpoints held.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "engine_harness.hpp"

namespace insert::test {
namespace {

using namespace proto::op;
using state::Record;
using state::RecordType;

const uint8_t kOk = proto::aeth_ack();
constexpr uint64_t kMs = 1'000'000;

std::string ip_text(const proto::IpAddress& ip) {
    std::ostringstream o;
    for (const uint8_t b : ip.bytes) o << int{b} << '.';
    return o.str();
}

// Every field of a record the engine fills, as text: equal texts, equal records.
std::string describe(const Record& r) {
    std::ostringstream o;
    switch (r.type) {
        case RecordType::msg: {
            const state::MsgRecord& m = r.msg;
            o << "msg " << ip_text(m.src_ip) << ip_text(m.dst_ip) << m.dst_qpn << ' '
              << m.has_src_qpn << m.src_qpn << ' ' << int(m.op) << ' ' << m.psn_first << '-'
              << m.psn_last << ' ' << m.pkts << ' ' << m.bytes << ' ' << m.t_first_ns << ' '
              << m.t_last_ns << ' ' << m.has_ack << m.t_ack_ns << ' ' << m.retx_pkts << ' '
              << m.naks << ' ' << int(m.status);
            break;
        }
        case RecordType::qp: {
            const state::QpRecord& q = r.qp;
            o << "qp " << ip_text(q.ip) << q.qpn << ' ' << int(q.pair_by) << ip_text(q.peer_ip)
              << q.peer_qpn << ' ' << q.final << q.evicted << q.endpoint_gone << ' ' << q.pkts
              << ' ' << q.bytes << ' ';
            for (const uint64_t n : q.msgs) o << n << ',';
            o << ' ' << q.dup_pkts << ' ' << q.ooo_pkts << ' ' << q.gaps << ' ' << q.missing << ' '
              << q.naks.seq << q.naks.rnr << ' ' << q.cnps << ' ' << q.ecn_ce << ' ' << q.t_first_ns
              << ' ' << q.t_last_ns << ' ' << int(q.transport);
            break;
        }
        case RecordType::event: {
            const state::EventRecord& e = r.event;
            o << "event " << int(e.kind) << ' ' << ip_text(e.ip) << e.qpn << ' ' << e.psn << ' '
              << e.t_ns << ' ' << e.count << ' ' << e.missing;
            break;
        }
        default:
            o << "other " << int(r.type);
    }
    return o.str();
}

std::vector<std::string> sorted_records(const EngineHarness& h) {
    std::vector<std::string> out;
    for (const Record& r : h.sink.records) out.push_back(describe(r));
    std::sort(out.begin(), out.end());
    return out;
}

// Two engines fed the same packets and housekeeping; one completes every report at its
// boundary (a scan of every slot then: what report() did before it became lazy), the
// other lets the traffic that follows take the snapshots.
struct EagerAndLazy {
    EagerAndLazy(state::EngineConfig e, state::EngineConfig l) : eager(e), lazy(l) {}
    void send(const Pkt& p, uint64_t ts) {
        eager.send(p, ts);
        lazy.send(p, ts);
    }
    void report(uint64_t ts) {
        eager.engine->report(ts);
        while (eager.engine->advance_report()) {
        }
        lazy.engine->report(ts);
    }
    void tick(uint64_t ts) {
        eager.engine->tick(ts);
        lazy.engine->tick(ts);
    }
    void finish(uint64_t ts) {
        eager.finish(ts);
        lazy.finish(ts);
    }
    EngineHarness eager, lazy;
};

std::string host(unsigned i) {
    return "10.0.0." + std::to_string(1 + i);
}

// Random RC traffic between four hosts: SENDs and multi-packet WRITEs with ACKs (some lost,
// some late), READs, CNPs, the odd gap, and a stray host's SENDs to responders (a second
// part of their endpoints); reports every few milliseconds, idle eviction on.
void random_traffic(EagerAndLazy& both, uint32_t seed) {
    std::mt19937 rng(seed);
    struct Conn {
        unsigned req, resp;
        uint32_t req_qp, resp_qp, psn;
        std::vector<uint32_t> unacked;
    };
    std::vector<Conn> conns;
    for (uint32_t i = 0; i < 24; ++i) {
        const unsigned a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
        conns.push_back({a, b, 100 + i, 200 + i, 1000 * i, {}});
    }
    uint64_t ts = 1'700'000'000'970'000'000ull;  // a CNP window ends 30 ms in
    uint64_t next_report = ts + 2 * kMs, next_tick = ts + kMs;
    for (int step = 0; step < 6000; ++step) {
        ts += 1 + rng() % 60'000;
        if (ts >= next_tick) {
            both.tick(ts / kMs * kMs);
            next_tick = ts / kMs * kMs + kMs;
        }
        if (ts >= next_report) {
            both.report(ts / (2 * kMs) * (2 * kMs));
            next_report = ts / (2 * kMs) * (2 * kMs) + 2 * kMs;
        }
        // Some connections go quiet for a while (and are evicted).
        Conn& c = conns[(rng() % 4 == 0) ? rng() % conns.size() : rng() % 8];
        const std::string req = host(c.req), resp = host(c.resp);
        switch (rng() % 8) {
            case 0:
            case 1:
                c.unacked.push_back(c.psn);
                both.send(Pkt{req, resp, kSendOnly, c.resp_qp, c.psn++, 64}, ts);
                break;
            case 2: {
                c.unacked.push_back(c.psn + 2);
                both.send(Pkt{req, resp, kWriteFirst, c.resp_qp, c.psn++, 1024, 49152, 0, 0x1000, 7,
                              2500},
                          ts);
                both.send(Pkt{req, resp, kWriteMiddle, c.resp_qp, c.psn++, 1024}, ts + 1);
                both.send(Pkt{req, resp, kWriteLast, c.resp_qp, c.psn++, 452}, ts + 2);
                ts += 2;
                break;
            }
            case 3:
            case 4:
                if (!c.unacked.empty()) {
                    // An ACK is coalescing: it acknowledges everything up to its PSN.
                    const uint32_t upto = c.unacked[rng() % c.unacked.size()];
                    if (rng() % 10 != 0)
                        both.send(Pkt{resp, req, kAck, c.req_qp, upto, 0, 49152, kOk}, ts);
                    std::erase_if(c.unacked, [&](uint32_t p) { return p <= upto; });
                }
                break;
            case 5:
                both.send(Pkt{resp, req, kCnp, c.req_qp, 0, 0}, ts);
                break;
            case 6:
                if (rng() % 4 == 0) c.psn += 1 + rng() % 3;  // a gap
                both.send(
                    Pkt{req, resp, kReadRequest, c.resp_qp, c.psn, 0, 49152, 0, 0x2000, 9, 512},
                    ts);
                both.send(Pkt{resp, req, kReadResponseOnly, c.req_qp, c.psn++, 512, 49152, kOk},
                          ts + 3);
                ts += 3;
                break;
            case 7:
                both.send(Pkt{"10.0.0.9", resp, kSendOnly, c.resp_qp, 50'000 + c.psn, 64}, ts);
                break;
        }
    }
    both.finish(ts + 1);
}

TEST(EngineReport, lazy_reports_write_what_a_scan_at_each_boundary_writes) {
    state::EngineConfig c = EngineHarness::small_config();
    c.idle_timeout_ns = 6 * kMs;
    state::EngineConfig slow = c;
    slow.report_sweep_slots = 1;  // most snapshots then come from the changes that follow
    for (const uint32_t seed : {1u, 2u, 3u}) {
        EagerAndLazy both(c, slow);
        random_traffic(both, seed);
        const auto eager = sorted_records(both.eager), lazy = sorted_records(both.lazy);
        const auto periodic =
            std::count_if(both.lazy.sink.records.begin(), both.lazy.sink.records.end(),
                          [](const Record& r) { return r.type == RecordType::qp && !r.qp.final; });
        EXPECT_GT(periodic, 500) << "seed " << seed;  // the reports did report
        ASSERT_EQ(eager.size(), lazy.size()) << "seed " << seed;
        for (std::size_t i = 0; i < eager.size(); ++i)
            ASSERT_EQ(eager[i], lazy[i]) << "seed " << seed << " record " << i;
    }
}

TEST(EngineReport, a_report_does_no_work_up_front_and_a_bounded_sweep_per_burst) {
    EngineHarness h;
    uint64_t ts = 1;
    for (uint32_t qp = 0; qp < 1000; ++qp)
        h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, qp, 0, 64}, ts++);
    const std::size_t before = h.sink.records.size();
    h.engine->report(ts);
    EXPECT_EQ(h.sink.records.size(), before);  // nothing yet

    // A packet to one endpoint: its record first; then the burst's sweep step.
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 999, 1, 64}, ts++);
    const std::size_t after_burst = h.sink.records.size() - before;
    EXPECT_EQ(after_burst, 1 + state::kReportSlotsPerBurst);

    unsigned steps = 0;
    while (h.engine->advance_report()) ++steps;
    EXPECT_EQ(steps, (1000 - state::kReportSlotsPerBurst) / state::kReportSlotsPerBurst);
    std::set<uint32_t> reported;
    for (std::size_t i = before; i < h.sink.records.size(); ++i) {
        const state::QpRecord& q = h.sink.records[i].qp;
        ASSERT_EQ(h.sink.records[i].type, RecordType::qp);
        EXPECT_FALSE(q.final);
        EXPECT_EQ(q.pkts, 1u) << "qpn " << q.qpn;  // as at the boundary, 999's second after
        EXPECT_TRUE(reported.insert(q.qpn).second) << "qpn " << q.qpn << " twice";
    }
    EXPECT_EQ(reported.size(), 1000u);
    EXPECT_FALSE(h.engine->advance_report());
}

TEST(EngineReport, a_peers_response_after_the_boundary_reports_the_endpoint_first) {
    EngineHarness h;
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 34, 100, 64}, 10);
    h.send(Pkt{"10.0.0.2", "10.0.0.1", kAck, 17, 100, 0, 49152, kOk}, 20);  // pairs by sport
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 34, 101, 64}, 30);
    h.engine->report(40);
    const std::size_t from = h.sink.records.size();
    // The ACK goes to QP 17 and completes QP 34's message: 34's record, as it was at 40
    // (one message done, one open), comes before the message's.
    h.send(Pkt{"10.0.0.2", "10.0.0.1", kAck, 17, 101, 0, 49152, kOk}, 50);
    ASSERT_GE(h.sink.records.size(), from + 3);
    std::vector<std::string> order;
    for (std::size_t i = from; i < from + 3; ++i) {
        const Record& r = h.sink.records[i];
        order.push_back(r.type == RecordType::msg ? "msg " + std::to_string(r.msg.psn_first)
                                                  : "qp " + std::to_string(r.qp.qpn));
        if (r.type == RecordType::qp && r.qp.qpn == 34) {
            EXPECT_EQ(r.qp.pkts, 2u);
            EXPECT_EQ(r.qp.msgs[static_cast<int>(state::MsgOp::send)], 1u);
            EXPECT_EQ(r.qp.t_last_ns, 30u);
        }
        if (r.type == RecordType::qp && r.qp.qpn == 17) {
            EXPECT_EQ(r.qp.pkts, 1u);
        }
    }
    EXPECT_EQ(order, (std::vector<std::string>{"qp 17", "qp 34", "msg 101"}));
}

TEST(EngineReport, pairing_after_the_boundary_reports_the_partner_unpaired_first) {
    EngineHarness h;
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 34, 100, 64}, 10);
    h.engine->report(40);
    // The first ACK makes QP 17 and pairs it with 34 (sport rule), which changes 34's
    // record (its peer) before anything is done to 34 itself.
    h.send(Pkt{"10.0.0.2", "10.0.0.1", kAck, 17, 100, 0, 49152, kOk}, 50);
    while (h.engine->advance_report()) {
    }
    std::vector<state::QpRecord> periodic;
    for (const Record& r : h.sink.records)
        if (r.type == RecordType::qp) periodic.push_back(r.qp);
    ASSERT_EQ(periodic.size(), 1u);  // 17 did not exist at 40
    EXPECT_EQ(periodic[0].qpn, 34u);
    EXPECT_EQ(periodic[0].pair_by, state::PairBy::none);
    EXPECT_EQ(periodic[0].msgs[static_cast<int>(state::MsgOp::send)], 0u);
    h.finish(60);
    EXPECT_EQ(h.qp("10.0.0.2", 34).pair_by, state::PairBy::sport);
}

TEST(EngineReport, an_eviction_after_the_boundary_is_preceded_by_the_periodic_record) {
    state::EngineConfig c = EngineHarness::small_config();
    c.idle_timeout_ns = 100;
    EngineHarness h(c);
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 34, 100, 64}, 10);
    h.engine->report(50);
    const std::size_t from = h.sink.records.size();
    h.engine->tick(200);
    std::vector<std::string> kinds;
    for (std::size_t i = from; i < h.sink.records.size(); ++i) {
        const Record& r = h.sink.records[i];
        if (r.type == RecordType::qp) kinds.push_back(r.qp.final ? "final" : "periodic");
        if (r.type == RecordType::msg) kinds.push_back("msg");
        if (r.type == RecordType::qp) {
            EXPECT_EQ(r.qp.pkts, 1u);
        }
    }
    EXPECT_EQ(kinds, (std::vector<std::string>{"periodic", "msg", "final"}));
    EXPECT_FALSE(h.engine->advance_report());  // nothing left to report
}

TEST(EngineReport, endpoints_created_after_the_boundary_wait_for_the_next_report) {
    EngineHarness h;
    h.send(Pkt{"10.0.0.1", "10.0.0.2", kSendOnly, 34, 100, 64}, 10);
    h.engine->report(50);
    h.send(Pkt{"10.0.0.3", "10.0.0.4", kSendOnly, 35, 100, 64}, 60);
    while (h.engine->advance_report()) {
    }
    std::vector<uint32_t> reported;
    for (const Record& r : h.sink.records)
        if (r.type == RecordType::qp) reported.push_back(r.qp.qpn);
    EXPECT_EQ(reported, std::vector<uint32_t>{34});
    h.engine->report(100);  // the next one has both
    h.finish(110);          // and completes it before the final records
    reported.clear();
    for (const Record& r : h.sink.records)
        if (r.type == RecordType::qp) reported.push_back(r.qp.qpn * 10 + r.qp.final);
    EXPECT_EQ(reported, (std::vector<uint32_t>{340, 340, 350, 341, 351}));
}

}  // namespace
}  // namespace insert::test
