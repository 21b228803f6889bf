// The producers' bus cost per record (docs/scale-out-cost.md): the CPU their own thread
// spends to route a record to its partitions (record_route) and to append it to the
// partitions' batches (record_batcher), and the bytes a record costs on the bus - its
// copies' lines and its share of the headers of the 64 KiB batches they travel in.
//
// Over realistic records, made once at the start: insert-gen's mixed_ops scenario
// (--scale 10, seed 1) replayed by insert-dp (its msg, qp, event and summary records) and
// insert-gen's host traces of it (insert-trace's records). INSERT_BUS_BENCH_DP and
// INSERT_BUS_BENCH_TRACE name other record files instead (the perf test passes its own);
// INSERT_GEN and INSERT_DP other programs than the build's.
//
//   build/bench/insert-bus-cost-bench [--benchmark_filter=Batch]
//
// Counters, per record the producer wrote (not per partition copy):
//   time_per_record  seconds of CPU per record (route, or route and batch): "54n" is 54 ns
//   copies           partition records per record (msg: 2 hosts; control plane: N)
//   body_bytes       JSON bytes on the bus: the line, once per copy
//   header_bytes     the message headers' share (Nats-Msg-Id, Insert-*) over full batches
//   records_per_batch, header_bytes_per_batch: the full batches' (sealed by size, as under
//   load; the last, partial batches of the run are left out)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/common/host_partition.hpp"
#include "dataplane/common/nats_client.hpp"
#include "dataplane/common/nats_publisher.hpp"
#include "dataplane/common/record_batcher.hpp"
#include "dataplane/common/record_route.hpp"
#include "dataplane/common/version.hpp"

namespace {

namespace fs = std::filesystem;

// The producers' batch size (nats_publisher.cpp's kBatchBytes) and the block in which
// insert-dp's record writer hands its lines over (record_writer.hpp's kFlushBytes).
constexpr std::size_t kBatchBytes = 64 << 10;
constexpr std::size_t kWriteBlock = 64 << 10;

struct Records {
    std::string text;  // JSON lines
    std::vector<std::string_view> lines;
};

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

void run_or_die(const std::string& command) {
    if (std::system(command.c_str()) != 0) {
        std::fprintf(stderr, "insert-bus-cost-bench: failed: %s\n", command.c_str());
        std::exit(1);
    }
}

// insert-gen's mixed_ops and insert-dp replay of it, in a directory removed at exit.
struct Made {
    fs::path dir;
    std::string dp, trace;
    Made() {
        if (std::getenv("INSERT_BUS_BENCH_DP") && std::getenv("INSERT_BUS_BENCH_TRACE")) {
            dp = std::getenv("INSERT_BUS_BENCH_DP");
            trace = std::getenv("INSERT_BUS_BENCH_TRACE");
            return;
        }
        dir = fs::temp_directory_path() / ("insert-bus-cost-bench-" + std::to_string(::getpid()));
        fs::create_directories(dir);
        const std::string gen = env_or("INSERT_GEN", INSERT_BUILD_ROOT "/bench/gen/insert-gen");
        const std::string dpx = env_or("INSERT_DP", INSERT_BUILD_ROOT "/dataplane/tools/insert-dp");
        const std::string base = (dir / "mixed_ops").string();
        run_or_die(gen + " --scenario mixed_ops --scale 10 --seed 1 --quiet --out " + base +
                   ".pcap --truth " + base + ".truth.json --host-traces " + base + ".hosts.jsonl");
        run_or_die(dpx + " replay " + base + ".pcap --quiet --records " + base + ".dp.jsonl");
        dp = base + ".dp.jsonl";
        trace = base + ".hosts.jsonl";
    }
    ~Made() {
        std::error_code ec;
        if (!dir.empty()) fs::remove_all(dir, ec);
    }
};

const Made& made() {
    static const Made m;
    return m;
}

Records load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "insert-bus-cost-bench: %s: cannot read\n", path.c_str());
        std::exit(1);
    }
    std::ostringstream s;
    s << f.rdbuf();
    Records r;
    r.text = s.str();
    std::string_view rest(r.text);
    while (!rest.empty()) {
        const std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) break;  // a cut last line is no record
        if (nl > 0) r.lines.push_back(rest.substr(0, nl + 1));
        rest.remove_prefix(nl + 1);
    }
    r.text.resize(r.text.size() - rest.size());
    return r;
}

const Records& records(int set) {
    static const Records dp = load(made().dp);
    static const Records trace = load(made().trace);
    return set == 0 ? dp : trace;
}

const char* set_name(int set) {
    return set == 0 ? "insert-dp" : "insert-trace";
}

// The bytes of a batch's headers as NATS writes them ("NATS/1.0\r\n", "Key: value\r\n"
// each, "\r\n"), and its subject: what a message carries, and the stream stores, besides
// its body. The values are the publisher's (nats_publisher.cpp, Impl::build).
std::size_t header_bytes(const insert::RecordBatch& b, const std::string& producer,
                         unsigned partitions) {
    const std::string partition = std::to_string(b.partition);
    const std::string seq = std::to_string(b.seq);
    const std::string values[][2] = {
        {"Nats-Msg-Id", producer + ":" + partition + ":" + seq},
        {"Insert-Producer", producer},
        {"Insert-Partition", partition},
        {"Insert-Partitions", std::to_string(partitions)},
        {"Insert-Seq", seq},
        {"Insert-Records", std::to_string(b.records)},
        {"Insert-Schema", std::string(insert::kRecordSchema)},
    };
    std::size_t n = std::string_view("NATS/1.0\r\n").size() + 2;
    for (const auto& [key, value] : values) n += key.size() + 2 + value.size() + 2;
    return n + insert::nats_client::partition_subject("insert", b.partition).size();
}

// Takes every batch and keeps its size; the room is unbounded (the benchmark measures the
// producer's thread, not the bus).
class CountingSink final : public insert::BatchSink {
  public:
    CountingSink(std::string producer, unsigned partitions)
        : producer_(std::move(producer)), partitions_(partitions) {}
    bool room(std::size_t, std::size_t) override { return true; }
    void sealed(insert::RecordBatch&& b) override {
        if (ending) return;  // the run's last, partial batches: not what a loaded bus sees
        ++full_batches;
        full_records += b.records;
        full_headers += header_bytes(b, producer_, partitions_);
    }
    bool ending = false;
    uint64_t full_batches = 0, full_records = 0, full_headers = 0;

  private:
    std::string producer_;
    unsigned partitions_;
};

// route_record over every line: the partition rule alone.
void BM_Route(benchmark::State& state) {
    const Records& r = records(static_cast<int>(state.range(0)));
    const insert::HostPartitions parts(static_cast<unsigned>(state.range(1)), nullptr);
    uint64_t copies = 0;
    for (auto _ : state) {
        copies = 0;
        for (const std::string_view line : r.lines) {
            const insert::RecordRoute route =
                insert::route_record(line.substr(0, line.size() - 1), parts);
            copies += route.every ? parts.count() : route.count;
        }
        benchmark::DoNotOptimize(copies);
    }
    const double n = static_cast<double>(r.lines.size());
    state.SetLabel(set_name(static_cast<int>(state.range(0))));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.lines.size()));
    state.counters["time_per_record"] = benchmark::Counter(
        n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["copies"] = static_cast<double>(copies) / n;
}

// What the producer's thread does per record with --nats: route it and append its copies
// to the open batches (RecordBatcher::write, in the record writer's 64 KiB blocks), sealing
// each batch at 64 KiB.
void BM_RouteAndBatch(benchmark::State& state) {
    const int set = static_cast<int>(state.range(0));
    const Records& r = records(set);
    const unsigned n_parts = static_cast<unsigned>(state.range(1));
    const std::string producer = insert::default_producer_identity(set_name(set));
    const auto now = insert::RecordBatcher::Clock::now();
    uint64_t body = 0, batched = 0;
    CountingSink sink(producer, n_parts);
    for (auto _ : state) {
        state.PauseTiming();
        insert::RecordBatcher batcher(insert::HostPartitions(n_parts, nullptr), kBatchBytes,
                                      std::chrono::hours(1));
        sink = CountingSink(producer, n_parts);
        state.ResumeTiming();
        const std::string_view text(r.text);
        for (std::size_t at = 0; at < text.size(); at += kWriteBlock)
            batcher.write(text.substr(at, kWriteBlock), now, sink);
        state.PauseTiming();
        sink.ending = true;
        batched = batcher.counts().records;
        batcher.seal_all(sink, true);
        state.ResumeTiming();
    }
    const insert::HostPartitions parts(n_parts, nullptr);
    for (const std::string_view line : r.lines) {
        const insert::RecordRoute route =
            insert::route_record(line.substr(0, line.size() - 1), parts);
        body += line.size() * (route.every ? n_parts : route.count);
    }
    const double n = static_cast<double>(r.lines.size());
    const double copies = static_cast<double>(batched) / n;
    state.SetLabel(set_name(set));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.lines.size()));
    state.counters["time_per_record"] = benchmark::Counter(
        n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["copies"] = copies;
    state.counters["body_bytes"] = static_cast<double>(body) / n;
    if (sink.full_batches) {
        const double per_batch = static_cast<double>(sink.full_records) / sink.full_batches;
        const double headers = static_cast<double>(sink.full_headers) / sink.full_batches;
        state.counters["records_per_batch"] = per_batch;
        state.counters["header_bytes_per_batch"] = headers;
        state.counters["header_bytes"] = headers / per_batch * copies;
    }
}

// Both record sets (0: insert-dp's, 1: insert-trace's) at the default 8 partitions and at
// 64 (the control plane's copies grow with the partition count).
void Sets(benchmark::internal::Benchmark* b) {
    b->ArgNames({"set", "partitions"});
    for (const int set : {0, 1})
        for (const int parts : {8, 64}) b->Args({set, parts});
    b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Route)->Apply(Sets);
BENCHMARK(BM_RouteAndBatch)->Apply(Sets);

}  // namespace

BENCHMARK_MAIN();
