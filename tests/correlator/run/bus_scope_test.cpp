// A partition's join on the bus (docs/scale-out.md "Leases and takeover"): which hosts'
// records it writes, and how the instance recognises a message delivered again.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "correlator/run/partition_scope.hpp"
#include "correlator/run/seq_ranges.hpp"

namespace insert::correlate {
namespace {

// With 8 partitions (docs/scale-out.md's table): 10.0.0.1 -> 5, .5 -> 1, .6 -> 0, .8 -> 2.
Ip ip(const char* text) {
    return *Ip::parse(text);
}

PartitionScope scope_of(std::vector<unsigned> owned, const std::string& hosts = {}) {
    BusOptions o;
    o.servers = {"nats://127.0.0.1:4222"};
    o.owned = std::move(owned);
    o.hosts = hosts;
    PartitionScope s;
    std::string error;
    EXPECT_TRUE(s.load(o, error)) << error;
    return s;
}

TEST(BusScope, OwnsTheHostsOfItsPartitions) {
    PartitionScope s = scope_of({0, 1, 2, 3});
    EXPECT_TRUE(s.owns(ip("10.0.0.5")));
    EXPECT_TRUE(s.owns(ip("10.0.0.6")));
    EXPECT_FALSE(s.owns(ip("10.0.0.1")));
    EXPECT_FALSE(s.owns(ip("10.0.0.1")));  // the remembered answer
    // No address (a QP whose GID was not seen): no partition's - not even 5, where "::"
    // would go - so that no join claims its host's clock by it.
    PartitionScope five = scope_of({5});
    EXPECT_TRUE(five.owns(ip("10.0.0.1")));
    EXPECT_FALSE(five.owns(Ip{}));
    PartitionScope all = scope_of({0, 1, 2, 3, 4, 5, 6, 7});
    EXPECT_TRUE(all.owns(ip("10.0.0.1")));
}

TEST(BusScope, MultiHomedHostsFollowTheirPrimaryAddress) {
    const std::string path = testing::TempDir() + "bus_scope_hosts";
    std::ofstream(path) << "10.0.0.1 10.0.0.5  # one host, partition 5\n";
    PartitionScope s = scope_of({0, 1, 2, 3}, path);
    EXPECT_FALSE(s.owns(ip("10.0.0.5")));  // 10.0.0.1's host, partition 5
    EXPECT_TRUE(s.owns(ip("10.0.0.6")));
    std::remove(path.c_str());
}

TEST(BusScope, HostsFileThatDoesNotLoadIsNamed) {
    BusOptions o;
    o.owned = {0};
    o.hosts = testing::TempDir() + "no-such-hosts-file";
    PartitionScope s;
    std::string error;
    EXPECT_FALSE(s.load(o, error));
    EXPECT_NE(error.find("--nats-hosts " + o.hosts), std::string::npos) << error;
}

TEST(SeqRanges, DeliveredAgainIsKnownAndGapsOfAnEarlierRunAreNot) {
    SeqRanges r;
    for (uint64_t s = 10; s <= 20; ++s) r.add(s);
    EXPECT_EQ(r.ranges(), 1u);
    EXPECT_TRUE(r.contains(10));
    EXPECT_TRUE(r.contains(20));
    EXPECT_FALSE(r.contains(9));
    // 21-24 were fetched by a run before this one and never acknowledged: they come later.
    for (uint64_t s = 25; s <= 30; ++s) r.add(s);
    EXPECT_EQ(r.ranges(), 2u);
    EXPECT_FALSE(r.contains(22));
    EXPECT_TRUE(r.contains(27));
    for (uint64_t s : {22u, 21u, 24u, 23u}) r.add(s);
    EXPECT_EQ(r.ranges(), 1u);
    EXPECT_TRUE(r.contains(23));
    EXPECT_FALSE(r.contains(31));
}

}  // namespace
}  // namespace insert::correlate
