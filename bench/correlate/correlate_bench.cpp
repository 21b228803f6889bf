// insert-correlate's throughput (the target: >= 1M input records/s per core) and its scaling
// with oneTBB threads, on a synthetic run written as JSON Lines once: hosts with
// processes and connected QPs, every message as a post_send, a poll_cq and a dataplane msg
// record (three input records per joined message). Results: docs/performance.md,
// "insert-correlate".
//
//   build/bench/correlate/insert-correlate-bench --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "correlator/input/ingest.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/host_model.hpp"
#include "correlator/run/correlate_run.hpp"
#include "correlator/tools/allocator.hpp"
#include "correlator/tools/correlate_options.hpp"

namespace {

// The batch runs measured here keep freed memory, as insert-correlate's batch runs do.
const bool kBatchAllocator = (insert::correlate::tune_allocator_for_batch_run(), true);

namespace fs = std::filesystem;

// 4 hosts x 8 processes x 32 QPs, 1000 messages each: 1,024 QPs, 1.02M messages, 3.1M lines.
// QP n of host h is connected to QP n of host h ^ 1 (pairs of hosts), which registered the
// memory written: normal traffic, every message joined, no alert.
// INSERT_CORRELATE_BENCH_MSGS sets the messages per QP (e.g. 20 under valgrind).
constexpr int kHosts = 4, kProcs = 8, kQps = 32;
const int kMsgs = [] {
    const char* env = std::getenv("INSERT_CORRELATE_BENCH_MSGS");
    return env ? std::max(1, std::atoi(env)) : 1000;
}();

std::string host_line(const std::string& body, int host, int pid, int64_t wall) {
    return "{\"type\":\"verb\"," + body + ",\"t_ns\":" + std::to_string(wall - 5000) +
           ",\"wall_ns\":" + std::to_string(wall) + ",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(pid) +
           ",\"comm\":\"bench\",\"cgroup\":4242,\"ip\":\"10.9.0." + std::to_string(host + 1) +
           "\",\"ctx\":\"0x5555\",\"host\":\"node" + std::to_string(host) + "\"}\n";
}

const fs::path& workload() {
    static const fs::path path = [] {
        const fs::path p = fs::temp_directory_path() /
                           ("insert-correlate-bench-" + std::to_string(::getpid()) + ".jsonl");
        std::ofstream f(p);
        for (int h = 0; h < kHosts; ++h) {
            const std::string ip = "10.9.0." + std::to_string(h + 1);
            const std::string peer = "10.9.0." + std::to_string((h ^ 1) + 1);
            for (int p = 0; p < kProcs; ++p) {
                const int pid = 1000 + h * 100 + p;
                // The memory its peers write: normal traffic, no security alert.
                f << host_line(
                    "\"verb\":\"reg_mr\",\"mr\":\"0x9000\",\"pd\":\"0x10\","
                    "\"addr\":140000000000000,\"length\":1073741824,"
                    "\"iova\":140000000000000,\"access\":15,\"lkey\":77,\"rkey\":77,"
                    "\"ret\":0",
                    h, pid, 900);
                for (int q = 0; q < kQps; ++q) {
                    const int qpn = 100 + p * kQps + q;
                    const std::string qp = "\"qp\":\"0x" + std::to_string(7000 + q) + "\"";
                    const std::string qpn_s = ",\"qpn\":" + std::to_string(qpn);
                    f << host_line("\"verb\":\"create_qp\"," + qp + qpn_s +
                                       ",\"qp_type\":\"RC\",\"pd\":\"0x10\",\"ret\":0",
                                   h, pid, 1000);
                    f << host_line("\"verb\":\"modify_qp\"," + qp + qpn_s +
                                       ",\"state\":\"RTR\",\"dest_qpn\":" + std::to_string(qpn) +
                                       ",\"peer_ip\":\"" + peer + "\",\"rq_psn\":1,\"ret\":0",
                                   h, pid, 1100);
                    f << host_line("\"verb\":\"modify_qp\"," + qp + qpn_s +
                                       ",\"state\":\"RTS\",\"sq_psn\":0,\"ret\":0",
                                   h, pid, 1200);
                    int64_t t = 10'000 + q * 37;
                    for (int k = 0; k < kMsgs; ++k, t += 20'000) {
                        const int len = 64 + (k * 131 + q) % 4000;
                        const std::string va = std::to_string(140000000000000LL + k * 8192);
                        f << host_line(
                            "\"verb\":\"post_send\"," + qp + qpn_s +
                                ",\"wr_id\":" + std::to_string(k) +
                                ",\"opcode\":\"RDMA_WRITE\",\"send_flags\":2,\"signaled\":true,"
                                "\"num_sge\":1,\"len\":" +
                                std::to_string(len) + ",\"remote_addr\":" + va +
                                ",\"rkey\":77,\"imm\":null,\"chain_index\":0,\"truncated\":false",
                            h, pid, t);
                        f << host_line("\"verb\":\"poll_cq\",\"cq\":\"0x20\"" + qpn_s +
                                           ",\"wr_id\":" + std::to_string(k) +
                                           ",\"status\":\"SUCCESS\",\"status_code\":0,\"opcode\":"
                                           "\"RDMA_WRITE\","
                                           "\"byte_len\":0,\"imm\":null,\"src_qp\":0,\"wc_flags\":"
                                           "0,\"index\":0,"
                                           "\"polled\":1",
                                       h, pid, t + 9000);
                        f << "{\"type\":\"msg\",\"src_ip\":\"" << ip << "\",\"dst_ip\":\"" << peer
                          << "\",\"dst_qpn\":" << qpn << ",\"src_qpn\":" << qpn
                          << ",\"op\":\"WRITE\",\"imm\":null,\"inv\":null,\"psn_first\":" << k
                          << ",\"psn_last\":" << k << ",\"pkts\":1,\"bytes\":" << len
                          << ",\"va\":" << va << ",\"rkey\":77,\"dma_len\":" << len
                          << ",\"t_first_ns\":" << t + 800 << ",\"t_last_ns\":" << t + 800
                          << ",\"t_ack_ns\":" << t + 7000
                          << ",\"latency_ns\":6200,\"retx_pkts\":0,\"naks\":0,\"rnr_naks\":0,"
                             "\"status\":\"ok\"}\n";
                    }
                }
            }
        }
        return p;
    }();
    return path;
}

const int64_t kLines = int64_t{kHosts} * kProcs * (1 + kQps * (3 + 3 * int64_t{kMsgs}));

// The whole command: read, parse, join, write every record (to /dev/null).
void BM_CorrelateRun(benchmark::State& state) {
    const std::string input = workload().string();
    for (auto _ : state) {
        std::vector<std::string> args = {"insert-correlate",
                                         input,
                                         "--records",
                                         "/dev/null",
                                         "--quiet",
                                         "--threads",
                                         std::to_string(state.range(0))};
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        insert::correlate::CorrelateOptions options;
        std::string error;
        insert::correlate::parse_correlate_options(static_cast<int>(argv.size()), argv.data(),
                                                   options, error);
        if (insert::correlate::run_correlate(options) != 0) state.SkipWithError("run failed");
    }
    state.SetItemsProcessed(state.iterations() * kLines);
    state.counters["records_per_s_per_thread"] = benchmark::Counter(
        static_cast<double>(state.iterations() * kLines) / static_cast<double>(state.range(0)),
        benchmark::Counter::kIsRate);
}

// Reading and decoding only.
void BM_Ingest(benchmark::State& state) {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, state.range(0));
    for (auto _ : state) {
        insert::correlate::HostNames names;
        insert::correlate::Ingested in;
        std::string error;
        insert::correlate::ingest({workload().string()}, names, in, error);
        benchmark::DoNotOptimize(in.msgs.data());
    }
    state.SetItemsProcessed(state.iterations() * kLines);
}

// The join alone, on decoded records (copied in each iteration, outside the timing).
void BM_Join(benchmark::State& state) {
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, state.range(0));
    insert::correlate::HostNames names;
    insert::correlate::Ingested in;
    std::string error;
    insert::correlate::ingest({workload().string()}, names, in, error);
    for (auto _ : state) {
        state.PauseTiming();
        auto events = in.events;
        auto msgs = in.msgs;
        state.ResumeTiming();
        insert::correlate::HostModel model = insert::correlate::build_host_model(events, names);
        const auto joined = insert::correlate::join_batch(model, msgs, names, {});
        benchmark::DoNotOptimize(joined.matches.data());
    }
    state.SetItemsProcessed(state.iterations() * kLines);
}

// One line decoded, again and again: the parser's own cost, without I/O or page faults.
void BM_ParseLine(benchmark::State& state) {
    const std::string line =
        state.range(0) == 0
            ? host_line(
                  "\"verb\":\"post_send\",\"qp\":\"0x7001\",\"qpn\":101,\"wr_id\":7,"
                  "\"opcode\":\"RDMA_WRITE\",\"send_flags\":2,\"signaled\":true,\"num_sge\":1,"
                  "\"len\":1234,\"remote_addr\":140000000008192,\"rkey\":77,\"imm\":null,"
                  "\"chain_index\":0,\"truncated\":false",
                  1, 1001, 123456789)
            : std::string(
                  "{\"type\":\"msg\",\"src_ip\":\"10.9.0.2\",\"dst_ip\":\"10.9.0.3\",\"dst_qpn\":"
                  "5101,"
                  "\"src_qpn\":101,\"op\":\"WRITE\",\"imm\":null,\"inv\":null,\"psn_first\":7,"
                  "\"psn_last\":7,\"pkts\":1,\"bytes\":1234,\"va\":140000000008192,\"rkey\":77,"
                  "\"dma_len\":1234,\"t_first_ns\":1700000000123456789,\"t_last_ns\":"
                  "1700000000123456789,\"t_ack_ns\":1700000000123466789,\"latency_ns\":10000,"
                  "\"retx_pkts\":0,\"naks\":0,\"rnr_naks\":0,\"status\":\"ok\"}\n");
    std::string padded = line + std::string(simdjson::SIMDJSON_PADDING, '\0');
    insert::correlate::HostNames names;
    insert::correlate::LineParser parser(names);
    insert::correlate::WireMsg msg;
    insert::correlate::WireQp qp;
    insert::correlate::HostEvent event;
    std::string reason;
    for (auto _ : state) {
        const auto kind =
            parser.parse(padded.data(), line.size() - 1, padded.size(), msg, qp, event, reason);
        benchmark::DoNotOptimize(kind);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(line.size()));
}
BENCHMARK(BM_ParseLine)->Arg(0)->Arg(1);

const int kMaxThreads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

void threads(benchmark::internal::Benchmark* b) {
    for (int t = 1; t <= kMaxThreads; t *= 2) b->Arg(t);
    if ((kMaxThreads & (kMaxThreads - 1)) != 0) b->Arg(kMaxThreads);
}

BENCHMARK(BM_CorrelateRun)->Apply(threads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Ingest)->Apply(threads)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Join)->Apply(threads)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    workload();
    benchmark::RunSpecifiedBenchmarks();
    std::filesystem::remove(workload());
    return 0;
}
