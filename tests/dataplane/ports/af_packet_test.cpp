// af_packet settings derived from the MTU (DESIGN.md "Inline over Linux interfaces").
#include <gtest/gtest.h>

#include "dataplane/ports/af_packet.hpp"

namespace insert::ports {
namespace {

TEST(PortConfig, mtu_9000_gives_the_settings_that_forwarded_jumbo_frames) {
    const AfPacketGeometry g = af_packet_geometry(9000);
    EXPECT_EQ(g.framesz, 10240u);
    EXPECT_EQ(g.blocksz, 20480u);
    EXPECT_EQ(g.framecnt, 512u);
    EXPECT_EQ(g.mbuf_data_room, 12288u);
    std::string error;
    EXPECT_TRUE(check_geometry(g, error)) << error;
}

TEST(PortConfig, mtu_1500_gives_the_pmd_defaults) {
    const AfPacketGeometry g = af_packet_geometry(1500);
    EXPECT_EQ(g.framesz, 2048u);
    EXPECT_EQ(g.blocksz, 4096u);
    std::string error;
    EXPECT_TRUE(check_geometry(g, error)) << error;
}

TEST(PortConfig, every_mtu_gives_consistent_settings) {
    for (uint32_t mtu = 68; mtu <= 16000; mtu += 97) {
        const AfPacketGeometry g = af_packet_geometry(mtu);
        std::string error;
        EXPECT_TRUE(check_geometry(g, error)) << mtu << ": " << error;
        EXPECT_GE(g.framesz, kTpacketRxOverhead + mtu + kL2Overhead);
        EXPECT_EQ(g.blocksz % g.framesz, 0u);
    }
}

TEST(PortConfig, inconsistent_settings_are_refused_with_the_reason) {
    std::string error;
    AfPacketGeometry g = af_packet_geometry(9000);
    g.framesz = 2048;  // the default frame size: jumbo frames would be cut by the kernel
    EXPECT_FALSE(check_geometry(g, error));
    EXPECT_NE(error.find("cut"), std::string::npos) << error;
    g = af_packet_geometry(9000);
    g.mbuf_data_room = 2176;  // the default mbuf: the PMD refuses the Rx queue
    EXPECT_FALSE(check_geometry(g, error));
    EXPECT_NE(error.find("mbufs"), std::string::npos) << error;
    g = af_packet_geometry(9000);
    g.blocksz = 10000;
    EXPECT_FALSE(check_geometry(g, error));
    g = af_packet_geometry(9000);
    g.framecnt = 511;
    EXPECT_FALSE(check_geometry(g, error));
    g = af_packet_geometry(9000);
    g.framesz = 10248 - 1;
    EXPECT_FALSE(check_geometry(g, error));
}

TEST(PortConfig, unknown_interface_is_named) {
    uint32_t mtu = 0;
    std::string error;
    EXPECT_FALSE(interface_mtu("insert-nope0", mtu, error));
    EXPECT_EQ(error, "unknown interface insert-nope0");
    EXPECT_TRUE(interface_mtu("lo", mtu, error)) << error;
    EXPECT_GT(mtu, 0u);
}

TEST(PortConfig, devargs_carry_the_settings) {
    EXPECT_EQ(af_packet_devargs("net_af_packet0", "veth1", 2, af_packet_geometry(9000)),
              "net_af_packet0,iface=veth1,qpairs=2,framesz=10240,blocksz=20480,framecnt=512");
}

}  // namespace
}  // namespace insert::ports
