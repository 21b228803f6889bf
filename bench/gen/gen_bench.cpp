// Generation speed of insert-gen (packets per second), end to end: simulation, ground
// truth, frame encoding with ICRC and the pcap write. Results and the command line are in
// docs/insert-gen.md.
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstdio>
#include <string>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/generator.hpp"

namespace {

std::string temp_pcap() {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/insert_gen_bench_" + std::to_string(::getpid()) +
           ".pcap";
}

// Packets per second of wall time (Mpps) and packets per run (pkts): divided by the CPU
// column (the whole process: every thread of the pipeline) that gives packets per
// CPU-second, the figure to compare on a shared machine.
void report(benchmark::State& state, uint64_t packets) {
    state.SetItemsProcessed(static_cast<int64_t>(packets));
    state.counters["Mpps"] =
        benchmark::Counter(static_cast<double>(packets) / 1e6, benchmark::Counter::kIsRate);
    state.counters["pkts"] =
        benchmark::Counter(static_cast<double>(packets), benchmark::Counter::kAvgIterations);
}

// `large` scaled by the benchmark arguments: QPs, packets; the third argument 1 also
// writes the truth file, as insert-gen does (run_to_files); the fourth is insert-gen's
// --threads (1 or 3). Writes real files.
void BM_GenerateLargeToDisk(benchmark::State& state) {
    insert::gen::ScaleOptions opts;
    opts.qps = static_cast<uint64_t>(state.range(0));
    opts.packets = static_cast<uint64_t>(state.range(1));
    const bool truth = state.range(2) != 0;
    const bool threaded = state.range(3) != 1;
    const std::string path = temp_pcap();
    const std::string truth_path = path + ".json";
    uint64_t packets = 0;
    for (auto _ : state) {
        insert::gen::Generation gen(*insert::gen::builtin_scenario("large", opts), 1);
        gen.set_threaded(threaded);
        std::string error;
        const bool ok = truth ? gen.run_to_files(path, truth_path, error) ==
                                    insert::gen::Generation::Failed::nothing
                              : gen.run(path, error);
        if (!ok) {
            state.SkipWithError(error.c_str());
            break;
        }
        packets += gen.truth().summary().pkts;
    }
    std::remove(path.c_str());
    std::remove(truth_path.c_str());
    report(state, packets);
}
BENCHMARK(BM_GenerateLargeToDisk)
    ->Args({100'000, 1'000'000, 0, 3})
    ->Args({100'000, 1'000'000, 1, 3})
    ->Args({100'000, 1'000'000, 1, 1})
    ->Args({20'000, 200'000, 0, 3})
    ->Args({2'000, 1'000'000, 1, 3})
    ->Args({2'000, 1'000'000, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()  // all threads of the pipeline, not only the simulator's
    ->UseRealTime();

// Simulation and truth only (no frames): how much of the time the wire format takes.
void BM_SimulateAndTruth(benchmark::State& state) {
    insert::gen::ScaleOptions opts;
    opts.qps = static_cast<uint64_t>(state.range(0));
    opts.packets = static_cast<uint64_t>(state.range(1));
    uint64_t packets = 0;
    for (auto _ : state) {
        insert::gen::Generation gen(*insert::gen::builtin_scenario("large", opts), 1);
        std::string error;
        gen.run("", error);
        packets += gen.truth().summary().pkts;
    }
    report(state, packets);
}
BENCHMARK(BM_SimulateAndTruth)
    ->Args({100'000, 1'000'000})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
