// The alert and congestion truth (alert_truth.hpp, congestion_truth.hpp) read the records
// the way the correlator does, without the generator's knowledge of what it scripted. Here
// that knowledge is the reference: every attack of the `attacks` scenario raises exactly its
// alert, naming the victim process the plan chose and the attacker; normal traffic - loss,
// retransmission, reordering, congestion - raises none but the scripted access errors; the
// congestion scenario's episode names the incast's senders and the flow caught in it. Seeds
// no scenario was tuned on.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "bench/gen/alert_truth.hpp"
#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/congestion_truth.hpp"
#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/generator.hpp"
#include "bench/gen/host_trace.hpp"
#include "bench/gen/scenario_json.hpp"

namespace insert::gen {
namespace {

constexpr uint64_t kSeeds[] = {61, 62, 63};

struct Judged {
    std::unique_ptr<Generation> gen;
    std::unique_ptr<HostTrace> trace;
    std::unique_ptr<E2eTruth> e2e;
    std::unique_ptr<AlertTruth> alerts;
    std::unique_ptr<CongestionTruth> congestion;
};

Judged judge(const Scenario& sc, uint64_t seed) {
    Judged j;
    j.gen = std::make_unique<Generation>(sc, seed);
    j.gen->record_host_events();
    std::string error;
    EXPECT_TRUE(j.gen->run("", error)) << error;
    j.trace = std::make_unique<HostTrace>(j.gen->scenario(), j.gen->sim(), seed);
    j.e2e = std::make_unique<E2eTruth>(j.gen->scenario(), *j.trace, j.gen->msgs(), j.gen->truth());
    j.alerts = std::make_unique<AlertTruth>(j.gen->scenario(), *j.trace, *j.e2e);
    j.congestion = std::make_unique<CongestionTruth>(j.gen->scenario(), *j.e2e, j.gen->truth());
    return j;
}

// At the command line's scale (`large` scaled down): what the e2e truth test runs.
Scenario builtin(const std::string& name) {
    ScaleOptions opts;
    opts.qps = 400;
    opts.packets = 4000;
    return *builtin_scenario(name, opts);
}

// The pid the plan gave the responder side of connection `conn`.
uint32_t responder_pid(const Judged& j, uint32_t conn) {
    const HostLayout& layout = j.gen->sim().layout();
    return layout.processes()[layout.process_of(conn, 1)].pid;
}

uint32_t victim_pid(const Judged& j, const AlertRecord& a) {
    return j.e2e->incarnations()[a.first.victim_inc].pid;
}

// The attacks scenario (builtin_scenarios.cpp): h4 against connection 0's responder process
// (9 guesses in three connections 100 us apart, a stale rkey, a write past an MR's end, one
// into a read-only MR, two lone guesses more than a second apart), connection 1's responder
// QP (a WRITE from h4, one spoofed from its peer), a QPN of connection 2's responder host
// that nobody owns, and forgeries spoofed from the peers of connections 3 and 4 that never
// complete.
TEST(GenIncidentTruth, every_attack_raises_exactly_its_alert_naming_the_victim) {
    const Scenario sc = builtin("attacks");
    constexpr uint16_t kAttacker = 4;
    for (const uint64_t seed : kSeeds) {
        const Judged j = judge(sc, seed);
        std::map<std::string, uint64_t> alerts;      // kind -> alert records
        std::map<uint32_t, uint64_t> injected_into;  // connection -> peer_mismatch/injections
        for (const AlertRecord& a : j.alerts->alerts()) {
            const std::string kind = alert_kind_name(a.kind);
            ++alerts[kind];
            const Offence& o = a.first;
            switch (a.kind) {
                case AlertKind::rkey_unknown:
                case AlertKind::rkey_stale:
                case AlertKind::out_of_bounds:
                case AlertKind::access_denied:
                case AlertKind::rkey_scan:
                    EXPECT_EQ(o.victim_ip, sc.conns[0].b) << kind << " seed " << seed;
                    EXPECT_EQ(victim_pid(j, a), responder_pid(j, 0)) << kind << " seed " << seed;
                    EXPECT_EQ(o.src_ip, kAttacker) << kind << " seed " << seed;
                    break;
                case AlertKind::peer_mismatch:
                case AlertKind::injected_message: {
                    // Connection 1's responder QP takes the peer_mismatch and the accepted
                    // injection; connections 3 and 4 the forgeries that never complete (a
                    // WRITE First, an unacknowledged WRITE Only): injected whatever their
                    // status (v1.3). Each injection carries its victim's peer address.
                    const uint32_t c = a.kind == AlertKind::peer_mismatch ? 1
                                       : o.victim_ip == sc.conns[3].b &&
                                               o.victim_qpn == j.gen->sim().conns()[3].qpn_b
                                           ? 3
                                       : o.victim_ip == sc.conns[4].b ? 4
                                                                      : 1;
                    ++injected_into[c];
                    EXPECT_EQ(o.victim_ip, sc.conns[c].b) << kind << " seed " << seed;
                    EXPECT_EQ(o.victim_qpn, j.gen->sim().conns()[c].qpn_b) << kind;
                    EXPECT_EQ(victim_pid(j, a), responder_pid(j, c)) << kind << " seed " << seed;
                    EXPECT_EQ(o.src_ip,
                              a.kind == AlertKind::peer_mismatch ? kAttacker : sc.conns[c].a)
                        << kind << " seed " << seed;
                    break;
                }
                case AlertKind::unowned_qp:
                    EXPECT_EQ(o.victim_ip, sc.conns[2].b) << "seed " << seed;
                    EXPECT_EQ(o.victim_inc, kNoIncarnation) << "seed " << seed;
                    EXPECT_EQ(o.src_ip, kAttacker) << "seed " << seed;
                    break;
            }
        }
        // One rkey_unknown per guessing connection (three of 3 guesses, two lone ones), the
        // 12 rkey offences inside one second a scan; every other attack once.
        const std::map<std::string, uint64_t> want = {
            {"rkey_unknown", 5}, {"rkey_stale", 1}, {"out_of_bounds", 1}, {"access_denied", 1},
            {"rkey_scan", 1},    {"unowned_qp", 1}, {"peer_mismatch", 1}, {"injected_message", 3}};
        EXPECT_EQ(alerts, want) << "seed " << seed;
        EXPECT_EQ(injected_into, (std::map<uint32_t, uint64_t>{{1, 2}, {3, 1}, {4, 1}}))
            << "seed " << seed;
        for (const AlertRecord& a : j.alerts->alerts()) {
            if (a.kind == AlertKind::rkey_scan) {
                EXPECT_EQ(a.count, 12u) << "seed " << seed;
            }
        }
    }
}

// Loss, retransmission, reordering, congestion, QPN reuse and trace losses are no attack:
// the only alerts of the other scenarios are the scripted access errors (an rkey no MR
// has: rkey_unknown), one offence per such message.
TEST(GenIncidentTruth, normal_traffic_raises_only_the_scripted_access_errors) {
    std::string error;
    auto file =
        load_scenario_file(INSERT_SOURCE_ROOT "/bench/gen/scenarios/host_traces.json", error);
    ASSERT_TRUE(file) << error;
    std::vector<std::pair<std::string, Scenario>> all = {{"host_traces.json", *file}};
    for (const std::string& name : builtin_names())
        if (name != "attacks") all.emplace_back(name, builtin(name));
    uint64_t judged = 0;  // scripted access errors that raised their alert
    for (const auto& [name, sc] : all) {
        const Judged j = judge(sc, kSeeds[0]);
        uint64_t scripted = 0;
        for (const MsgInfo& m : j.gen->sim().messages()) scripted += m.access_error;
        uint64_t offences = 0;
        for (const AlertRecord& a : j.alerts->alerts()) {
            EXPECT_EQ(a.kind, AlertKind::rkey_unknown) << name;
            offences += a.count;
        }
        // host_traces.json's complications (an untraced host, lost trace records) can hide
        // the target's memory regions, and a target nobody can judge raises nothing.
        if (name == "host_traces.json")
            EXPECT_LE(offences, scripted) << name;
        else
            EXPECT_EQ(offences, scripted) << name;
        judged += offences;
    }
    EXPECT_GT(judged, 0u);  // `losses` scripts one
}

// The congestion scenario: a 3-to-1 incast into h3 and a small-message flow from h4 into
// h3 through it. Every episode is at h3; the incast's senders h0-h2 are its contributors
// and the h4 flow's process is among its victims, with latency added per message against
// its own latency before the incast.
TEST(GenIncidentTruth, congestion_names_the_incast_senders_and_the_victim_flow) {
    const Scenario sc = builtin("congestion");
    for (const uint64_t seed : kSeeds) {
        const Judged j = judge(sc, seed);
        const auto& episodes = j.congestion->episodes();
        ASSERT_FALSE(episodes.empty()) << "seed " << seed;
        for (const CongestionRecord& c : episodes) {
            EXPECT_EQ(c.dst_ips, std::vector<uint16_t>{3}) << "seed " << seed;
            EXPECT_GT(c.cnps + c.ecn_ce, 0u) << "seed " << seed;
            std::set<uint16_t> contributors, victims;
            for (const CongestionSource& s : c.contributors) contributors.insert(s.ip);
            for (const CongestionSource& s : c.victims) {
                victims.insert(s.ip);
                EXPECT_TRUE(s.victim) << "seed " << seed;
                EXPECT_GE(s.excess_ns, 20'000) << "seed " << seed;
                if (s.ip != 4) continue;
                // The flow ran alone into h3 before the incast: its own baseline is its
                // unloaded latency (~3 us), and h3's link queue adds 100s of us at its p99.
                ASSERT_TRUE(s.baseline_net_ns_p99.has_value()) << "seed " << seed;
                EXPECT_LT(*s.baseline_net_ns_p99, 10'000) << "seed " << seed;
                EXPECT_GT(s.net_ns_p99 - *s.baseline_net_ns_p99, 100'000) << "seed " << seed;
                EXPECT_GT(s.net_ns_mean, *s.baseline_net_ns_mean) << "seed " << seed;
            }
            EXPECT_TRUE(contributors.count(0) && contributors.count(1) && contributors.count(2))
                << "seed " << seed;
            EXPECT_TRUE(victims.count(4)) << "seed " << seed;
        }
    }
}

}  // namespace
}  // namespace insert::gen
