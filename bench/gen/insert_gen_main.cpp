// insert-gen: writes a RoCEv2 capture and its ground truth for a scenario.
//   insert-gen --scenario losses --seed 7 --out losses.pcap --truth losses.truth.json
//   insert-gen --scenario my.json --seed 1 --out x.pcap --truth x.truth.json
//   insert-gen --scenario large --qps 100000 --packets 2000000 --out big.pcap --truth big.json
//   insert-gen --scenario mixed_ops --out m.pcap --truth m.json --host-traces m.hosts.jsonl
//       --e2e-truth m.e2e.jsonl
//   insert-gen --list-scenarios
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/generator.hpp"
#include "bench/gen/host_outputs.hpp"
#include "bench/gen/scenario_json.hpp"
#include "dataplane/common/version.hpp"

namespace {

constexpr int kExitUsage = 2;  // SPEC 8: bad options or input

int usage_error(const std::string& msg) {
    std::fprintf(stderr, "insert-gen: %s\n", msg.c_str());
    return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"insert-gen: RoCEv2 traffic synthesizer with ground truth", "insert-gen"};
    app.set_version_flag("--version", insert::version_line("insert-gen"),
                         "print the version and exit");
    app.footer(
        "Examples:\n"
        "  insert-gen --list-scenarios\n"
        "  insert-gen --scenario losses --seed 7 --out losses.pcap --truth losses.truth.json\n"
        "  insert-gen --scenario my.json --seed 1 --out x.pcap --truth x.truth.json\n"
        "  insert-gen --scenario mixed_ops --out m.pcap --truth m.json --host-traces "
        "m.hosts.jsonl --e2e-truth m.e2e.jsonl\n"
        "  insert-gen --scenario large --qps 100000 --packets 2000000 --out big.pcap --truth "
        "big.json");
    std::string scenario_arg, out_path, truth_path, traces_path, e2e_path;
    uint64_t seed = 1;
    bool list = false, quiet = false;
    // Simulator, truth and output as a three-stage pipeline when there are two cores or more:
    // about half the wall time of one thread on two free cores.
    unsigned threads = std::thread::hardware_concurrency() > 1 ? 3 : 1;
    insert::gen::ScaleOptions scale;
    app.add_flag("--list-scenarios", list, "print the built-in scenario names, one per line");
    app.add_option("--scenario", scenario_arg, "built-in scenario name or a scenario JSON file");
    app.add_option("--seed", seed, "random seed (same seed, same bytes)");
    app.add_option("--out", out_path, "pcap to write (nanosecond timestamps)");
    app.add_option("--truth", truth_path, "ground-truth JSON to write");
    app.add_option("--host-traces", traces_path,
                   "also write every simulated host's insert-trace records (JSON Lines)");
    app.add_option("--e2e-truth", e2e_path,
                   "also write the exact insert-correlate output for those host traces "
                   "(e2e, app, clock, pair records and an e2e_summary; JSON Lines)");
    app.add_option("--scale", scale.scale,
                   "multiply message/connection counts of a built-in scenario")
        ->check(CLI::Range(0.001, 1000.0));
    app.add_option("--qps", scale.qps, "large: number of QPs (two per connection)")
        ->check(CLI::Range(2, 20'000'000));
    app.add_option("--packets", scale.packets, "large: approximate number of packets")
        ->check(CLI::Range(1, 2'000'000'000));
    app.add_option("--threads", threads,
                   "1: everything on one thread (leaves the other cores free); 3: simulator, truth "
                   "and output as a pipeline of three stages (default with 2+ CPUs); same bytes "
                   "either way")
        ->check(CLI::IsMember({1u, 3u}));
    app.add_flag("--quiet", quiet, "no summary line on stderr");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 0;
    } catch (const CLI::ParseError& e) {
        return usage_error(e.what());
    }

    if (list) {
        for (const std::string& name : insert::gen::builtin_names())
            std::printf("%s\n", name.c_str());
        return 0;
    }
    if (scenario_arg.empty())
        return usage_error("--scenario: required (a name from --list-scenarios or a .json file)");
    if (out_path.empty()) return usage_error("--out: required (the pcap to write)");
    if (truth_path.empty())
        return usage_error("--truth: required (the ground-truth JSON to write)");

    std::optional<insert::gen::Scenario> scenario =
        insert::gen::builtin_scenario(scenario_arg, scale);
    if (!scenario) {
        if (scenario_arg.find('/') == std::string::npos &&
            scenario_arg.find(".json") == std::string::npos)
            return usage_error("--scenario: unknown scenario \"" + scenario_arg +
                               "\" (see --list-scenarios)");
        std::string error;
        scenario = insert::gen::load_scenario_file(scenario_arg, error);
        if (!scenario) return usage_error("--scenario: " + error);
    } else {
        const std::string error = insert::gen::validate(*scenario);
        if (!error.empty()) return usage_error("--scenario " + scenario_arg + ": " + error);
    }

    const auto t0 = std::chrono::steady_clock::now();
    // Left to the operating system at exit, on purpose: freeing the hundreds of MB and
    // ~10^5 hash-table nodes of a large scenario one by one took ~4% of the run. (Held by
    // a static pointer, so leak checkers see it as reachable.)
    static insert::gen::Generation* const kept =
        new insert::gen::Generation(std::move(*scenario), seed);
    insert::gen::Generation& gen = *kept;
    gen.set_threaded(threads > 1);
    const bool hosts = !traces_path.empty() || !e2e_path.empty();
    if (hosts) gen.record_host_events();  // costs nothing when not asked for
    std::string error;
    switch (gen.run_to_files(out_path, truth_path, error)) {
        case insert::gen::Generation::Failed::pcap:
            return usage_error("--out: " + error);
        case insert::gen::Generation::Failed::truth:
            return usage_error("--truth: " + error);
        case insert::gen::Generation::Failed::nothing:
            break;
    }
    insert::gen::HostOutputStats hs;
    if (hosts) {
        const auto failed = insert::gen::write_host_outputs(gen, traces_path, e2e_path, error, hs);
        if (failed != insert::gen::HostOutputFailed::nothing) {
            std::remove(out_path.c_str());  // nothing half-done is left behind
            std::remove(truth_path.c_str());
            return usage_error((failed == insert::gen::HostOutputFailed::traces ? "--host-traces: "
                                                                                : "--e2e-truth: ") +
                               error);
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!quiet) {
        const auto& s = gen.truth().summary();
        std::fprintf(
            stderr, "%s",
            fmt::format("insert-gen: {} seed {}: {} frames ({} RoCE, {} non-RoCE, {} malformed), "
                        "{} endpoints, {} connections, {} msgs in {:.3f} s ({:.2f} Mpps)\n",
                        gen.scenario().name, seed, s.pkts, s.roce_pkts, s.non_roce_pkts,
                        s.malformed[0] + s.malformed[1] + s.malformed[2], s.endpoints,
                        s.connections, s.msgs, secs, secs > 0 ? s.pkts / secs / 1e6 : 0.0)
                .c_str());
        if (hosts)
            std::fprintf(
                stderr, "%s",
                fmt::format("insert-gen: host traces: {} records ({} lost); e2e truth: {} "
                            "matched ({} exact, {} resync), {} unmatched work requests, "
                            "{} wire-only messages; rule check: {} mispaired, {} "
                            "indistinguishable; {} QPN reuse overlaps; {} alerts, {} "
                            "congestion episodes\n",
                            hs.records, hs.lost, hs.e2e, hs.exact, hs.resync, hs.unmatched_wr,
                            hs.wire_only, hs.mispaired, hs.indistinguishable, hs.reuse_overlaps,
                            hs.alerts, hs.episodes)
                    .c_str());
    }
    return 0;
}
