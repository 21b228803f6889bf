// Same scenario and seed: byte-identical pcap and truth; another seed: different traffic.
// The encoder's direct RoCE frame writer gives the bytes of proto::build_frame.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "bench/gen/builtin_scenarios.hpp"
#include "bench/gen/frame_encoder.hpp"
#include "bench/gen/generator.hpp"

namespace insert::gen {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// `streamed`: run_to_files() (what insert-gen does: the truth's msg records written while
// the simulation runs); else run() and then write_truth() from the records kept in memory.
// `threaded`: the three-stage pipeline, else everything on the calling thread.
ScaleOptions small() {
    ScaleOptions opts;
    opts.scale = 0.2;
    opts.qps = 300;
    opts.packets = 3000;
    return opts;
}

std::pair<std::string, std::string> generate(const std::string& name, uint64_t seed,
                                             const std::string& tag, bool streamed = false,
                                             bool threaded = true,
                                             const ScaleOptions& opts = small()) {
    Generation gen(*builtin_scenario(name, opts), seed);
    gen.set_threaded(threaded);
    const std::string base =
        ::testing::TempDir() + "gen_det_" + std::to_string(::getpid()) + "_" + name + "_" + tag;
    std::string error;
    if (streamed) {
        EXPECT_EQ(gen.run_to_files(base + ".pcap", base + ".json", error),
                  Generation::Failed::nothing)
            << error;
        EXPECT_TRUE(gen.truth().msgs().empty());
    } else {
        EXPECT_TRUE(gen.run(base + ".pcap", error)) << error;
        EXPECT_TRUE(gen.write_truth(base + ".json", error)) << error;
    }
    auto out = std::make_pair(slurp(base + ".pcap"), slurp(base + ".json"));
    std::remove((base + ".pcap").c_str());
    std::remove((base + ".json").c_str());
    return out;
}

class Determinism : public ::testing::TestWithParam<std::string> {};

TEST_P(Determinism, same_seed_same_bytes_other_seed_other_bytes) {
    const auto a = generate(GetParam(), 11, "a");
    const auto b = generate(GetParam(), 11, "b");
    const auto c = generate(GetParam(), 12, "c");
    ASSERT_GT(a.first.size(), 24u);
    EXPECT_TRUE(a.first == b.first) << "pcap differs for the same seed";
    EXPECT_TRUE(a.second == b.second) << "truth differs for the same seed";
    EXPECT_FALSE(a.first == c.first) << "another seed gave the same pcap";
}

// The pipeline's stages (simulator, truth, output) never change the bytes, nor does
// running everything on one thread; streaming the truth file gives the bytes of writing it
// at the end.
TEST_P(Determinism, threads_and_streamed_truth_give_the_same_bytes) {
    const auto kept = generate(GetParam(), 3, "kept", false, false);
    for (int run = 0; run < 4; ++run) {
        const bool streamed = run != 1, threaded = run != 2;
        const auto other = generate(GetParam(), 3, "other", streamed, threaded);
        EXPECT_TRUE(kept.first == other.first) << "pcap differs, run " << run;
        EXPECT_TRUE(kept.second == other.second) << "truth differs, run " << run;
    }
}

// The same over many of the pipeline's batches (2048 packets each) in flight at once:
// `large` at 2000 QPs gives ~50,000 packets.
TEST(DeterminismManyBatches, threads_give_the_bytes_of_one_thread) {
    ScaleOptions opts;
    opts.qps = 2000;
    opts.packets = 50000;
    const auto one = generate("large", 5, "one", true, false, opts);
    ASSERT_GT(one.first.size(), 50000u * 60);
    for (int run = 0; run < 3; ++run) {
        const auto three = generate("large", 5, "three", true, true, opts);
        EXPECT_TRUE(one.first == three.first) << "pcap differs, run " << run;
        EXPECT_TRUE(one.second == three.second) << "truth differs, run " << run;
    }
}

// Every frame of every built-in scenario (with CM MADs, VLANs, IPv6, CNPs, malformed and
// background frames): the direct writer equals proto::build_frame. A second encoder sees
// every packet in the same order, so its per-host IPv4 identification counters match.
TEST_P(Determinism, direct_frames_equal_the_builders) {
    ScaleOptions opts;
    opts.scale = 0.25;
    opts.qps = 300;
    opts.packets = 3000;
    for (uint64_t seed : {1, 2}) {
        Generation gen(*builtin_scenario(GetParam(), opts), seed);
        FrameEncoder reference(gen.scenario(), gen.sim());
        std::vector<uint8_t> want(kMaxFrameBytes);
        uint64_t compared = 0, differ = 0;
        std::string error;
        ASSERT_TRUE(gen.run("", error, [&](const SimPacket& p, std::span<const uint8_t> frame) {
            const bool roce = p.cls == PacketClass::roce && p.cm == CmKind::none;
            const std::size_t n = roce ? reference.encode_roce_with_builder(p, want.data())
                                       : reference.encode_into(p, want.data());
            compared += roce;
            if (n != frame.size() || !std::equal(frame.begin(), frame.end(), want.begin()))
                ++differ;
        })) << error;
        EXPECT_GT(compared, 0u);
        EXPECT_EQ(differ, 0u) << GetParam() << " seed " << seed;
    }
}

INSTANTIATE_TEST_SUITE_P(Builtins, Determinism, ::testing::ValuesIn(builtin_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace insert::gen
