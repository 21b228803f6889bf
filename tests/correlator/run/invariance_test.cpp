// SPEC 10: the same inputs give the same records whatever the thread count, the order of
// the records and how they are split into files; bad input is counted and skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "tests/correlator/correlate_harness.hpp"

namespace insert::correlate::test {
namespace {

// Several hosts (with clock offsets), processes, QPs and QPN reuse, every operation, lost
// trace records and unobserved messages, from a seeded generator.
struct Workload {
    std::vector<json> trace, dp;
    std::map<std::string, int64_t> offsets;  // host -> its true clock offset

    explicit Workload(uint32_t seed) {
        std::mt19937_64 rng(seed);
        const auto uniform = [&](uint64_t lo, uint64_t hi) {
            return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
        };
        const char* ops[] = {"SEND", "WRITE", "READ", "FETCH_ADD"};
        const char* wr_ops[] = {"SEND", "RDMA_WRITE", "RDMA_READ", "ATOMIC_FETCH_AND_ADD"};
        const char* wc_ops[] = {"SEND", "RDMA_WRITE", "RDMA_READ", "FETCH_ADD"};
        for (uint32_t h = 0; h < 3; ++h) {
            const int64_t offset = static_cast<int64_t>(uniform(0, 40000)) - 20000;
            offsets["host" + std::to_string(h)] = offset;
            const std::string ip = "10.1.0." + std::to_string(h + 1);
            const std::string peer = "10.1.0." + std::to_string((h + 1) % 3 + 1);
            for (uint32_t p = 0; p < 2; ++p) {
                TraceProcess proc{"host" + std::to_string(h), static_cast<int>(1000 + 10 * h + p),
                                  "proc" + std::to_string(p), 40u + h, ip};
                for (uint32_t lifetime = 0; lifetime < 2; ++lifetime) {
                    // Lifetime 1 of process 1 reuses the QPN of process 0's lifetime 0.
                    const uint32_t qpn =
                        p == 1 && lifetime == 1 ? 100 + h * 10 : 100 + h * 10 + p * 3 + lifetime;
                    const uint32_t dest = 500 + h * 10 + p * 3 + lifetime;
                    const std::string qp = "0x" + std::to_string(7000 + p * 100 + lifetime);
                    const int64_t start = 1'000'000 * (lifetime * 2 + p) + 1000;
                    trace.push_back(proc.create_qp(start + offset, qp, qpn));
                    trace.push_back(proc.rtr(start + offset + 10, qp, qpn, peer, dest));
                    uint32_t psn = static_cast<uint32_t>(uniform(0, 0xFFFFFF));
                    trace.push_back(proc.rts(start + offset + 20, qp, qpn, psn));
                    int64_t t = start + 1000;
                    for (uint32_t k = 0; k < 60; ++k) {
                        const uint32_t op = static_cast<uint32_t>(uniform(0, 3));
                        const uint64_t len = op == 3 ? 8 : uniform(1, 5000);
                        const uint64_t va = (1 << 20) + k * 4096;  // distinct operations
                        const bool signaled = uniform(0, 3) != 0 || k == 59;
                        const int64_t post = t, first = t + static_cast<int64_t>(uniform(50, 400));
                        const int64_t ack = first + static_cast<int64_t>(uniform(500, 4000));
                        const int64_t poll = ack + static_cast<int64_t>(uniform(100, 900));
                        if (uniform(0, 30) != 0)  // a lost post_send record
                            trace.push_back(proc.post_send(
                                post + offset, qp, qpn, k, wr_ops[op], len,
                                op ? std::optional<uint64_t>(va) : std::nullopt,
                                op ? std::optional<uint32_t>(9) : std::nullopt, signaled));
                        if (signaled) trace.push_back(proc.poll(poll + offset, qpn, k, wc_ops[op]));
                        if (uniform(0, 40) != 0)  // an unobserved message
                            dp.push_back(wire_msg(ip, peer, dest, qpn, ops[op], psn, len, first,
                                                  ack, va, 9));
                        psn = (psn + 1) & 0xFFFFFF;
                        t += static_cast<int64_t>(uniform(2000, 9000));
                    }
                    trace.push_back(proc.destroy_qp(t + offset + 100000, qp, qpn));
                }
            }
        }
    }
};

std::vector<json> without_wall(std::vector<json> records) {
    for (json& r : records)
        if (r["type"] == "summary") r.erase("wall_s");
    return records;
}

TEST(Invariance, threads_order_and_split_do_not_change_the_records) {
    const Workload w(20261201);
    const Outcome base = correlate({w.dp, w.trace}, {"--threads", "1"});
    ASSERT_EQ(base.status, 0);
    // Something to compare: joins, resyncs, unmatched on both sides, several clocks.
    const json s = base.summary();
    EXPECT_GT(s["e2e"].get<int>(), 500);
    EXPECT_GT(s["resync"].get<int>(), 0);
    EXPECT_GT(s["unmatched_wr"].get<int>(), 0);
    EXPECT_GT(s["wire_only"].get<int>(), 0);
    EXPECT_EQ(base.of_type("clock").size(), 3u);

    // Every record shuffled into four files, mixing host and dataplane records.
    std::vector<json> all = w.trace;
    all.insert(all.end(), w.dp.begin(), w.dp.end());
    std::mt19937 rng(7);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::vector<json>> split(4);
    for (std::size_t i = 0; i < all.size(); ++i) split[rng() % 4].push_back(all[i]);
    for (const char* threads : {"1", "2", "4"}) {
        const Outcome other = correlate(split, {"--threads", threads});
        ASSERT_EQ(other.status, 0);
        EXPECT_EQ(without_wall(other.records), without_wall(base.records)) << threads << " threads";
    }
}

TEST(Invariance, every_clock_holds_its_true_offset_within_its_bounds) {
    const Workload w(99);
    const Outcome run = correlate({w.dp, w.trace});
    ASSERT_EQ(run.of_type("clock").size(), 3u);
    for (const json& c : run.of_type("clock")) {
        const int64_t truth = w.offsets.at(c["host"]);
        EXPECT_LE(c["lo_ns"].get<int64_t>(), truth) << c.dump();
        EXPECT_GE(c["hi_ns"].get<int64_t>(), truth) << c.dump();
        EXPECT_EQ(c["consistent"], true);
    }
    for (const json& e : run.of_type("e2e")) {
        if (e["total_ns"].is_null() || e["net_ns"].is_null()) continue;
        EXPECT_EQ(e["host_ns"].get<int64_t>() + e["net_ns"].get<int64_t>() +
                      e["completion_ns"].get<int64_t>(),
                  e["total_ns"].get<int64_t>());
        EXPECT_GE(e["host_ns"].get<int64_t>(), 0);
        EXPECT_GE(e["completion_ns"].get<int64_t>(), 0);
    }
}

TEST(BadInput, is_counted_and_skipped_never_fatal) {
    const TraceProcess app{"hA", 100, "app", 7, "10.0.0.1"};
    std::string good = app.create_qp(100, "0xa0", 17).dump() + "\n" +
                       app.rtr(110, "0xa0", 17, "10.0.0.2", 50).dump() + "\n" +
                       app.post_send(1000, "0xa0", 17, 1, "SEND", 64).dump() + "\n" +
                       app.poll(2000, 17, 1, "SEND").dump() + "\n";
    const std::string dp =
        wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 1100, 1500).dump() + "\n" +
        "this is not json\n"                                          // not_json
        "[1,2,3]\n"                                                   // not_json (not an object)
        "{\"type\":\"msg\",\"src_ip\":12}\n"                          // bad_field (wrong type)
        "{\"type\":\"msg\",\"src_ip\":\"10.0.0.1\"}\n"                // bad_field (missing fields)
        "{\"type\":\"verb\",\"verb\":\"post_send\",\"pid\":\"x\"}\n"  // bad_field
        "{\"type\":\"telemetry\",\"x\":1}\n"                          // unknown_type
        "{\"no_type\":1}\n"                                           // unknown_type
        "\n"                                                          // blank: not counted
        "{\"type\":\"event\",\"kind\":\"gap\"}\n"                     // ignored
        "{\"type\":\"msg\",\"src_ip\":\"10.0";                        // truncated last line
    const Outcome run = correlate_text({dp, good});
    ASSERT_EQ(run.status, 0);
    EXPECT_EQ(run.of_type("e2e").size(), 1u);
    const json bad = run.summary()["bad"];
    EXPECT_EQ(bad["not_json"], 2);
    EXPECT_EQ(bad["bad_field"], 3);
    EXPECT_EQ(bad["unknown_type"], 2);
    EXPECT_EQ(bad["truncated"], 1);
    EXPECT_EQ(run.summary()["inputs"]["ignored"], 1);
    EXPECT_EQ(run.summary()["inputs"]["msg"], 1);
}

// Keys are matched where they stand in the line; an escaped key is the key it spells, and
// a key that only starts or ends like a known one is not that one.
TEST(BadInput, escaped_keys_are_the_keys_they_spell_and_near_misses_are_ignored) {
    const TraceProcess app{"hA", 100, "app", 7, "10.0.0.1"};
    const std::string host = app.create_qp(100, "0xa0", 17).dump() + "\n" +
                             app.rtr(110, "0xa0", 17, "10.0.0.2", 50).dump() + "\n" +
                             app.post_send(1000, "0xa0", 17, 1, "SEND", 64).dump() + "\n" +
                             app.poll(2000, 17, 1, "SEND").dump() + "\n";
    std::string msg = wire_msg("10.0.0.1", "10.0.0.2", 50, 17, "SEND", 1000, 64, 1100, 1500).dump();
    // dst_qpn spelt with an escape, plus keys one character off the known ones.
    const std::string plain = "\"dst_qpn\":50";
    ASSERT_NE(msg.find(plain), std::string::npos);
    msg.replace(msg.find(plain), plain.size(),
                "\"dst\\u005fqpn\":50,\"dst_qpnx\":7,\"dst_qp\":8,\"pkt\":9");
    const Outcome run = correlate_text({msg + "\n", host});
    ASSERT_EQ(run.status, 0);
    ASSERT_EQ(run.of_type("e2e").size(), 1u);
    EXPECT_EQ(run.of_type("e2e")[0]["dst_qpn"], 50);
    EXPECT_EQ(run.summary()["bad"]["bad_field"], 0);
}

TEST(BadInput, options_and_files_fail_with_status_2) {
    EXPECT_EQ(correlate_text({"{}\n"}, {"--threads", "-1"}).status, 2);
    EXPECT_EQ(correlate_text({"{}\n"}, {"--clock-offset", "hA"}).status, 2);
    EXPECT_EQ(correlate_text({"{}\n"}, {"--clock-offset", "hA=12x"}).status, 2);
    EXPECT_EQ(correlate_text({"{}\n"}, {"/nonexistent/input.jsonl"}).status, 2);
}

}  // namespace
}  // namespace insert::correlate::test
