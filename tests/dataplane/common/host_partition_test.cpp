// The partition of a host (dataplane/common/host_partition.hpp, docs/scale-out.md "The
// partition rule"): FNV-1a 64 of the address text as records write it, modulo the count;
// the hosts file that makes a multi-homed host one key.
#include "dataplane/common/host_partition.hpp"

#include <gtest/gtest.h>

#include <string>

namespace insert {
namespace {

TEST(HostPartition, fnv1a64_is_the_published_function) {
    // The FNV reference vectors: anyone can recompute a partition from the text alone.
    EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
    static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cull, "usable at compile time");
}

TEST(HostPartition, eight_hosts_of_a_subnet_on_eight_partitions) {
    // docs/scale-out.md's table: insert-gen's hosts 10.0.0.1-8 with the default 8.
    const HostPartitions parts(8, nullptr);
    const unsigned want[] = {5, 4, 7, 6, 1, 0, 3, 2};
    for (unsigned i = 0; i < 8; ++i)
        EXPECT_EQ(parts.of_ip("10.0.0." + std::to_string(i + 1)), want[i]) << i + 1;
    EXPECT_EQ(parts.of_ip("fd00::1"), 2u);
    EXPECT_EQ(HostPartitions(1, nullptr).of_ip("10.0.0.1"), 0u);
}

TEST(HostPartition, canonical_text_as_records_write_it) {
    std::string out;
    ASSERT_TRUE(canonical_ip("10.0.0.1", out));
    EXPECT_EQ(out, "10.0.0.1");
    ASSERT_TRUE(canonical_ip("FD00:0:0:0::1", out));
    EXPECT_EQ(out, "fd00::1");
    ASSERT_TRUE(canonical_ip("::ffff:10.1.2.3", out));  // a GID holding an IPv4 address
    EXPECT_EQ(out, "10.1.2.3");
    EXPECT_FALSE(canonical_ip("10.0.0.256", out));
    EXPECT_FALSE(canonical_ip("host-a", out));
    EXPECT_FALSE(canonical_ip("", out));
}

TEST(HostPartition, hosts_file_makes_extra_addresses_their_primary) {
    HostMap map;
    std::string error;
    ASSERT_TRUE(
        map.parse("# multi-homed hosts\n"
                  "10.0.0.1 10.0.1.1\tfd00::0:1  # three addresses, one host\n"
                  "\n"
                  "   10.0.0.2 10.0.1.2\r\n",
                  "hosts", error))
        << error;
    EXPECT_EQ(map.size(), 3u);
    EXPECT_EQ(map.key_of("10.0.1.1"), "10.0.0.1");
    EXPECT_EQ(map.key_of("fd00::1"), "10.0.0.1");  // listed in another spelling
    EXPECT_EQ(map.key_of("10.0.1.2"), "10.0.0.2");
    EXPECT_EQ(map.key_of("10.0.0.1"), "10.0.0.1");
    EXPECT_EQ(map.key_of("10.9.9.9"), "10.9.9.9");  // not listed: a host of its own
    const HostPartitions parts(8, &map);
    EXPECT_EQ(parts.of_ip("10.0.1.1"), parts.of_ip("10.0.0.1"));
    EXPECT_EQ(parts.of_ip("fd00::1"), parts.of_ip("10.0.0.1"));
    EXPECT_EQ(parts.of_ip("10.0.1.2"), HostPartitions(8, nullptr).of_ip("10.0.0.2"));
}

TEST(HostPartition, hosts_file_errors_name_the_line) {
    HostMap map;
    std::string error;
    EXPECT_FALSE(map.parse("10.0.0.1 10.0.1.1\n10.0.0.2 eth0\n", "f", error));
    EXPECT_EQ(error, "f:2: 'eth0' is not an IP address");
    EXPECT_FALSE(map.parse("10.0.0.1 10.0.1.1\n10.0.0.2 10.0.1.1\n", "f", error));
    EXPECT_EQ(error, "f:2: 10.0.1.1 is listed already (line 1): an address belongs to one host");
    EXPECT_FALSE(map.load("/nonexistent/hosts", error));
    EXPECT_EQ(error, "/nonexistent/hosts: No such file or directory");
}

}  // namespace
}  // namespace insert
