// Where the correlator's record arrays come from and how big they are made up front:
// huge_allocator.hpp (the hugetlb pool while it keeps room for DPDK, else transparent huge
// pages), record_estimate.hpp (the records of each kind, from each file's first lines) and
// parallelism.hpp (the --threads limit that sizes them per thread).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <tbb/global_control.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "correlator/input/huge_allocator.hpp"
#include "correlator/input/ingest.hpp"
#include "correlator/input/parallelism.hpp"
#include "correlator/input/record_estimate.hpp"

namespace insert::correlate {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(RecordArrays, pool_storage_is_zeroed_and_released_by_munmap) {
    // Keeping nothing back, 4 MiB must be in the pool the test command reserves
    // (scripts/setup.sh), even with DPDK tests running beside this one.
    void* p = huge_storage::allocate(3 * kMiB + 1, 0);
    ASSERT_TRUE(huge_storage::from_pool(p)) << "no 2 MiB hugepages free: scripts/setup.sh";
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < 4 * kMiB; i += 4096) ASSERT_EQ(bytes[i], 0) << i;
    std::memset(p, 0x5a, 3 * kMiB + 1);
    huge_storage::deallocate(p, 3 * kMiB + 1);
    EXPECT_FALSE(huge_storage::from_pool(p));
}

TEST(RecordArrays, without_room_in_the_pool_storage_is_ordinary) {
    // Asked to keep more than any pool holds: aligned ordinary memory, released with free.
    void* p = huge_storage::allocate(5 * kMiB, std::size_t{1} << 50);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(huge_storage::from_pool(p));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % huge_storage::kHuge, 0u);
    std::memset(p, 1, 5 * kMiB);
    huge_storage::deallocate(p, 5 * kMiB);
}

TEST(RecordArrays, vectors_keep_their_records_across_growth) {
    // From operator new through 2 MiB storage, reallocated several times.
    HugeVector<uint64_t> v;
    for (uint64_t i = 0; i < 3'000'000; ++i) v.push_back(i * 2654435761u);
    for (uint64_t i = 0; i < v.size(); i += 997) ASSERT_EQ(v[i], i * 2654435761u) << i;
}

std::string verb_line(int i) {
    return "{\"type\":\"verb\",\"verb\":\"post_send\",\"qp\":\"0x7001\",\"qpn\":101,\"wr_id\":" +
           std::to_string(i) +
           ",\"opcode\":\"RDMA_WRITE\",\"signaled\":true,\"len\":64,\"wall_ns\":" +
           std::to_string(1000 + i) +
           ",\"pid\":7,\"tid\":7,\"comm\":\"bench\",\"cgroup\":1,\"host\":\"node0\"}\n";
}

std::string msg_line(int i) {
    return "{\"type\":\"msg\",\"src_ip\":\"10.9.0.2\",\"dst_ip\":\"10.9.0.3\",\"dst_qpn\":5101,"
           "\"src_qpn\":101,\"op\":\"WRITE\",\"psn_first\":" +
           std::to_string(i) + ",\"psn_last\":" + std::to_string(i) +
           ",\"pkts\":1,\"bytes\":64,\"t_first_ns\":" + std::to_string(5000 + i) +
           ",\"t_last_ns\":" + std::to_string(5000 + i) + ",\"status\":\"ok\"}\n";
}

class TempFiles : public ::testing::Test {
  protected:
    fs::path file(const std::string& name, const std::string& text) {
        const fs::path p = fs::temp_directory_path() /
                           ("insert-estimate-" + std::to_string(::getpid()) + "-" + name);
        std::ofstream(p, std::ios::binary) << text;
        made_.push_back(p);
        return p;
    }
    void TearDown() override {
        for (const fs::path& p : made_) fs::remove(p);
    }

  private:
    std::vector<fs::path> made_;
};

// The estimate of n records: at least n, and about a quarter more (the samples' lines are a
// few bytes shorter than the files' average here: their numbers have fewer digits).
void expect_estimate(uint64_t estimate, uint64_t truth, const char* what) {
    EXPECT_GE(estimate, truth) << what;
    EXPECT_LE(estimate, truth + truth * 3 / 10 + 48) << what;
}

TEST_F(TempFiles, estimate_scales_each_files_sample_to_its_size) {
    // A dataplane file and a host file, each far longer than the sample, and a short one
    // read whole: the kinds of each file are counted in its own sample.
    std::string dp, host, mixed;
    for (int i = 0; i < 6000; ++i) dp += msg_line(i);
    for (int i = 0; i < 9000; ++i) host += verb_line(i);
    for (int i = 0; i < 30; ++i) mixed += verb_line(i) + verb_line(i) + msg_line(i);
    ASSERT_GT(dp.size(), 4 * kEstimateSampleBytes);
    const RecordEstimate e = estimate_records(
        {file("dp", dp).string(), file("host", host).string(), file("mixed", mixed).string()});
    expect_estimate(e.msgs, 6000 + 30, "msgs");
    expect_estimate(e.events, 9000 + 60, "events");
    EXPECT_LE(e.qps, 48u);  // none: the constant of each file
}

TEST_F(TempFiles, estimate_skips_what_it_cannot_sample) {
    // Standard input, a missing file, an empty one, and a first line longer than the sample.
    const std::string long_line =
        "{\"type\":\"verb\",\"comm\":\"" + std::string(kEstimateSampleBytes, 'a') + "\"}\n";
    // And a FIFO no one writes to: not waited for.
    const fs::path fifo = file("fifo", "");
    fs::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const RecordEstimate e =
        estimate_records({"-", "/nonexistent/insert-estimate", file("empty", "").string(),
                          file("long", long_line + verb_line(1)).string(), fifo.string()});
    EXPECT_EQ(e.msgs + e.qps + e.events, 0u);
}

TEST(RecordArrays, parallelism_follows_the_threads_option) {
    // --threads sets a global_control, which the arena's max_concurrency does not report.
    {
        const tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
        EXPECT_EQ(parallelism(), 1u);
    }
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const tbb::global_control all(tbb::global_control::max_allowed_parallelism, cores);
    EXPECT_EQ(parallelism(), cores);
}

}  // namespace
}  // namespace insert::correlate
