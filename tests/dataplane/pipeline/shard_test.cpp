// Software RSS (dataplane/pipeline/shard.hpp): connection affinity and bounds safety.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "dataplane/pipeline/shard.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/workload/workload.hpp"

using namespace insert;
using insert::pipeline::ShardPolicy;

namespace {

std::vector<uint8_t> frame(const char* src, const char* dst, uint16_t sport, uint8_t vlans = 0) {
    proto::FrameSpec f;
    f.src_ip = *proto::IpAddress::parse(src);
    f.dst_ip = *proto::IpAddress::parse(dst);
    f.src_port = sport;
    f.vlan_count = vlans;
    f.t.bth.opcode = proto::op::kSendOnly;
    f.payload_len = 16;
    std::vector<uint8_t> out(256);
    out.resize(proto::build_frame(f, out));
    return out;
}

}  // namespace

TEST(Shard, both_directions_of_a_connection_hash_alike) {
    for (ShardPolicy policy : {ShardPolicy::ip_pair, ShardPolicy::ip_pair_sport}) {
        for (uint8_t vlans : {0, 1, 2}) {
            EXPECT_EQ(pipeline::shard_hash(frame("10.0.0.1", "10.0.0.2", 4000, vlans), policy),
                      pipeline::shard_hash(frame("10.0.0.2", "10.0.0.1", 4000, vlans), policy));
            EXPECT_EQ(pipeline::shard_hash(frame("fd00::1", "fd00::2", 4000, vlans), policy),
                      pipeline::shard_hash(frame("fd00::2", "fd00::1", 4000, vlans), policy));
        }
    }
}

TEST(Shard, ip_pair_ignores_ports_and_ip_pair_sport_uses_them) {
    const auto a = frame("10.0.0.1", "10.0.0.2", 4000);
    const auto b = frame("10.0.0.1", "10.0.0.2", 4001);
    EXPECT_EQ(pipeline::shard_hash(a, ShardPolicy::ip_pair),
              pipeline::shard_hash(b, ShardPolicy::ip_pair));
    EXPECT_NE(pipeline::shard_hash(a, ShardPolicy::ip_pair_sport),
              pipeline::shard_hash(b, ShardPolicy::ip_pair_sport));
}

TEST(Shard, vlan_tags_do_not_change_the_worker) {
    EXPECT_EQ(pipeline::shard_hash(frame("10.0.0.1", "10.0.0.2", 1, 0), ShardPolicy::ip_pair),
              pipeline::shard_hash(frame("10.0.0.1", "10.0.0.2", 1, 2), ShardPolicy::ip_pair));
}

TEST(Shard, never_reads_past_a_cut_frame) {
    const auto f = frame("fd00::1", "fd00::2", 4000, 2);
    for (std::size_t n = 0; n <= f.size(); ++n) {
        // Copy each prefix into an exactly-sized heap buffer so ASan sees any overread.
        std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<long>(n));
        (void)pipeline::shard_hash(cut, ShardPolicy::ip_pair_sport);
    }
    const std::array<uint8_t, 14> arp = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,
                                         0,    0,    0,    0,    0,    0x08, 0x06};
    EXPECT_EQ(pipeline::shard_hash(arp, ShardPolicy::ip_pair), 0u);
}

TEST(Shard, index_is_in_range_and_spreads_host_pairs) {
    for (unsigned workers : {1u, 2u, 3u, 4u, 7u}) {
        std::vector<unsigned> load(workers);
        for (unsigned h = 0; h < 4096; ++h) {
            const uint64_t hash = pipeline::shard_hash(
                frame(("10.1." + std::to_string(h / 256) + "." + std::to_string(h % 256)).c_str(),
                      "10.2.0.1", 1),
                ShardPolicy::ip_pair);
            const unsigned w = pipeline::shard_index(hash, workers);
            ASSERT_LT(w, workers);
            ++load[w];
        }
        for (unsigned w = 0; w < workers; ++w) EXPECT_GT(load[w], 4096 / workers * 8 / 10);
    }
}

TEST(Shard, policy_names_round_trip) {
    EXPECT_EQ(pipeline::parse_shard_policy("ip-pair"), ShardPolicy::ip_pair);
    EXPECT_EQ(pipeline::parse_shard_policy("ip-pair-sport"), ShardPolicy::ip_pair_sport);
    EXPECT_FALSE(pipeline::parse_shard_policy("5-tuple"));
    EXPECT_EQ(pipeline::shard_policy_name(ShardPolicy::ip_pair_sport), "ip-pair-sport");
}
