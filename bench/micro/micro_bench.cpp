// Google Benchmark micro-benchmarks of the per-packet stages, in ns per packet:
//   BM_Parse          parse_frame() (wire format, bounds checks)
//   BM_ShardHash      software RSS key (the reader's per-frame cost)
//   BM_EngineHot      Engine::process on one connection: classification, message
//                     assembly and completion with the endpoint state in L1
//   BM_EngineTable/N  Engine::process_burst over N endpoints in random order, in bursts
//                     of 32 as the worker calls it: the cost of state beyond the cache
//   BM_EngineSteady/N the same once every endpoint exists and is paired (warm-up untimed)
//   BM_RecordRing     one Record through the worker->exporter rte_ring (push + pop)
//   BM_RecordJson     one msg Record encoded as a JSON line by RecordWriter
//   BM_RandomLines/S/D reads of one cache line each at random in S MiB, D bytes apart
//                     (64: every line; 4096: one line per 4 KiB page), 16 independent
//                     reads at a time: what a random state line costs this machine when
//                     the reads are prefetched in groups (the engine's stages), in ns
// EAL starts once in main() (rte_ring needs it), on 4 KB pages unless hugepages are free.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/gen/huge_vector.hpp"
#include "dataplane/export/record_writer.hpp"
#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/record_ring.hpp"
#include "dataplane/pipeline/shard.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/workload/workload.hpp"

using namespace insert;

namespace {

struct Trace {
    workload::CompactWorkload w;
    std::vector<proto::ParsedPacket> parsed;
};

const Trace& trace(uint32_t endpoints, uint64_t messages) {
    static std::vector<std::pair<std::pair<uint32_t, uint64_t>, std::unique_ptr<Trace>>> cache;
    for (auto& [key, t] : cache)
        if (key == std::make_pair(endpoints, messages)) return *t;
    auto t = std::make_unique<Trace>();
    workload::WorkloadSpec spec;
    spec.endpoints = endpoints;
    spec.hosts = 1024;
    spec.messages = messages;
    t->w = workload::build_compact_workload(spec);
    t->parsed.resize(t->w.frames());
    for (std::size_t i = 0; i < t->w.frames(); ++i)
        proto::parse_frame({t->w.frame(i), t->w.lengths[i]}, t->parsed[i]);
    cache.emplace_back(std::make_pair(endpoints, messages), std::move(t));
    return *cache.back().second;
}

class NullSink final : public state::RecordSink {
  public:
    bool push(const state::Record& r) override {
        benchmark::DoNotOptimize(&r);
        return true;
    }
};

void BM_Parse(benchmark::State& st) {
    const Trace& t = trace(1000, 20000);
    proto::ParsedPacket p;
    std::size_t i = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(proto::parse_frame({t.w.frame(i), t.w.lengths[i]}, p));
        if (++i == t.w.frames()) i = 0;
    }
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_Parse);

void BM_ShardHash(benchmark::State& st) {
    const Trace& t = trace(1000, 20000);
    std::size_t i = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(
            pipeline::shard_hash({t.w.frame(i), t.w.lengths[i]}, pipeline::ShardPolicy::ip_pair));
        if (++i == t.w.frames()) i = 0;
    }
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_ShardHash);

// Runs the trace through fresh engines; a new engine (timing paused) whenever the trace
// wraps, so every packet is processed as new traffic, never as a duplicate. The first
// `warm` packets of each pass are processed with timing paused: with warm > 0 the timed
// packets meet endpoints that exist and are paired (a long-running appliance's steady
// state), with warm = 0 endpoint creation and pairing are part of the cost.
void run_engine(benchmark::State& st, const Trace& t, uint32_t capacity, std::size_t warm = 0) {
    NullSink sink;
    state::EngineConfig cfg;
    cfg.max_endpoints = capacity;
    std::string error;
    auto engine = state::Engine::create(cfg, sink, error);
    if (!engine) {
        st.SkipWithError(error.c_str());
        return;
    }
    constexpr std::size_t kBurst = 32;
    const std::size_t n = t.parsed.size() / kBurst * kBurst;
    warm = warm / kBurst * kBurst;
    std::array<proto::ParsedPacket, kBurst> burst;
    const auto warm_up = [&] {
        for (std::size_t k = 0; k < warm; k += kBurst)
            engine->process_burst(&t.parsed[k], &t.w.timestamps[k], kBurst);
    };
    warm_up();
    std::size_t i = warm;
    for (auto _ : st) {
        if (i == n) {
            st.PauseTiming();
            engine.reset();
            engine = state::Engine::create(cfg, sink, error);
            warm_up();
            i = warm;
            st.ResumeTiming();
        }
        // The worker hands the engine a burst it has just parsed into a 32-entry array (in
        // L1); here the parsed packets come from a trace of hundreds of MB, so each burst is
        // copied into such an array first (a sequential read, as the worker's parse reads
        // frames) rather than leaving the engine's stages to miss on the trace.
        std::copy_n(&t.parsed[i], kBurst, burst.begin());
        engine->process_burst(burst.data(), &t.w.timestamps[i], kBurst);
        i += kBurst;
    }
    st.SetItemsProcessed(st.iterations() * kBurst);
    st.counters["ns_per_pkt"] =
        benchmark::Counter(static_cast<double>(st.iterations() * kBurst),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    st.counters["bytes_per_endpoint"] = static_cast<double>(engine->bytes_per_endpoint());
    // Sanity: the workload completes every message, so nothing should overflow.
    const state::EngineCounters& c = engine->counters();
    st.counters["overflow"] = static_cast<double>(c.msgs_overflow.load() +
                                                  c.orphans_dropped.load() + c.table_full.load());
}

void BM_EngineHot(benchmark::State& st) {
    run_engine(st, trace(2, 200000), 1024);
}
BENCHMARK(BM_EngineHot);

void BM_EngineTable(benchmark::State& st) {
    const auto endpoints = static_cast<uint32_t>(st.range(0));
    run_engine(st, trace(endpoints, uint64_t{endpoints} * 4), endpoints + endpoints / 4);
}
BENCHMARK(BM_EngineTable)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kNanosecond);

// Steady state: 8 messages per endpoint, the first half processed untimed, so the timed
// packets find their endpoints created and paired (1M endpoints: 4 per endpoint, for RAM).
void BM_EngineSteady(benchmark::State& st) {
    const auto endpoints = static_cast<uint32_t>(st.range(0));
    const uint64_t per_endpoint = endpoints >= 1000000 ? 4 : 8;
    const Trace& t = trace(endpoints, uint64_t{endpoints} * per_endpoint);
    run_engine(st, t, endpoints + endpoints / 4, t.parsed.size() / 2);
}
BENCHMARK(BM_EngineSteady)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kNanosecond);

void BM_RecordRing(benchmark::State& st) {
    std::string error;
    auto ring = pipeline::RecordRing::create("bm_records", 4096, pipeline::FullPolicy::drop, error);
    if (!ring) {
        st.SkipWithError(error.c_str());
        return;
    }
    state::Record in, out[32];
    in.type = state::RecordType::msg;
    for (auto _ : st) {
        for (int k = 0; k < 32; ++k) ring->push(in);
        benchmark::DoNotOptimize(ring->pop(out, 32));
    }
    st.SetItemsProcessed(st.iterations() * 32);
}
BENCHMARK(BM_RecordRing);

void BM_RecordJson(benchmark::State& st) {
    std::FILE* devnull = std::fopen("/dev/null", "w");
    exporter::RecordWriter writer(devnull);
    state::Record r;
    r.type = state::RecordType::msg;
    r.msg.src_ip = *proto::IpAddress::parse("10.0.0.1");
    r.msg.dst_ip = *proto::IpAddress::parse("10.0.0.2");
    r.msg.dst_qpn = 0x123;
    r.msg.pkts = 4;
    r.msg.bytes = 4000;
    r.msg.op = state::MsgOp::write;
    r.msg.has_va = r.msg.has_dma_len = r.msg.has_ack = true;
    r.msg.t_first_ns = 1'700'000'000'000'000'000ull;
    r.msg.t_ack_ns = r.msg.t_first_ns + 5000;
    for (auto _ : st) {
        writer.write(r);
        ++r.msg.dst_qpn;  // a new endpoint in the latency book now and then
        r.msg.dst_qpn &= 0xFFF;
    }
    writer.flush();
    st.SetItemsProcessed(st.iterations());
    std::fclose(devnull);
}
BENCHMARK(BM_RecordJson);

void BM_RandomLines(benchmark::State& st) {
    const std::size_t span = static_cast<std::size_t>(st.range(0)) << 20;
    const auto stride = static_cast<std::size_t>(st.range(1));
    // 2 MiB pages (the hugetlb pool when it has room, else transparent huge pages), as the
    // engine's tables have; every byte written, so no page is faulted in while timing.
    const gen::HugeVector<char> buf(span, 1);
    const char* const base = buf.data();
    constexpr std::size_t kReads = std::size_t{1} << 20, kGroup = 16;
    std::vector<uint32_t> offsets(kReads);
    std::mt19937 rng(7);
    for (uint32_t& o : offsets) o = static_cast<uint32_t>(rng() % (span / stride));
    uint64_t sum = 0;
    std::size_t i = 0;
    for (auto _ : st) {
        // kGroup independent loads: the core keeps them all in flight, as after a prefetch.
        for (std::size_t k = 0; k < kGroup; ++k)
            sum += *reinterpret_cast<const volatile uint64_t*>(base + offsets[i + k] * stride);
        i = (i + kGroup) & (kReads - 1);
    }
    benchmark::DoNotOptimize(sum);
    st.SetItemsProcessed(st.iterations() * kGroup);
    st.counters["ns_per_line"] =
        benchmark::Counter(static_cast<double>(st.iterations() * kGroup),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RandomLines)
    ->Args({4, 64})     // fits the last-level cache
    ->Args({64, 64})    // 100k endpoints' tables: DRAM
    ->Args({1024, 64})  // 1M endpoints
    ->Args({64, 4096})  // 16k pages, 1 MiB of lines: the TLB alone
    ->Unit(benchmark::kNanosecond);

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    pipeline::EalRequest req;
    req.lcores = 1;
    req.tool = "insert-micro-bench";
    pipeline::EalSession eal;
    std::string error;
    if (!eal.start(req, error)) {
        std::fprintf(stderr, "insert-micro-bench: %s\n", error.c_str());
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
