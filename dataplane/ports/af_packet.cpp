#include "dataplane/ports/af_packet.hpp"

#include <net/if.h>

#include <fstream>

namespace insert::ports {

namespace {

uint32_t round_up(uint32_t v, uint32_t granule) {
    return (v + granule - 1) / granule * granule;
}

}  // namespace

AfPacketGeometry af_packet_geometry(uint32_t mtu) {
    AfPacketGeometry g;
    g.mtu = mtu;
    g.framesz = round_up(kTpacketRxOverhead + g.max_frame(), kSlotGranule);
    // Two slots per block: a block is allocated as one physically contiguous chunk, so
    // keeping it small matters more than packing more slots.
    g.blocksz = round_up(2 * g.framesz, kPageSize);
    g.framecnt = kDefaultFrameCount;
    g.mbuf_data_room = round_up(kMbufHeadroom + g.framesz - kTpacketTxDataOffset, kMbufGranule);
    return g;
}

bool check_geometry(const AfPacketGeometry& g, std::string& error) {
    const auto fail = [&](const std::string& what) {
        error = "af_packet settings for MTU " + std::to_string(g.mtu) + ": " + what;
        return false;
    };
    if (g.framesz % kTpacketAlign != 0)
        return fail("framesz " + std::to_string(g.framesz) + " is not a multiple of 16");
    if (g.framesz < kTpacketRxOverhead + g.max_frame())
        return fail("framesz " + std::to_string(g.framesz) + " cannot hold a " +
                    std::to_string(g.max_frame()) + "-byte frame after the " +
                    std::to_string(kTpacketRxOverhead) +
                    "-byte ring header (the kernel would cut it)");
    if (g.blocksz % kPageSize != 0 || g.blocksz < g.framesz)
        return fail("blocksz " + std::to_string(g.blocksz) +
                    " must be whole pages holding a frame");
    const uint32_t per_block = g.blocksz / g.framesz;
    if (g.framecnt == 0 || g.framecnt % per_block != 0)
        return fail("framecnt " + std::to_string(g.framecnt) + " is not a multiple of the " +
                    std::to_string(per_block) + " frames per block");
    // The PMD refuses an Rx queue whose mbufs cannot take a whole slot's data.
    if (g.mbuf_data_room < kMbufHeadroom + g.framesz - kTpacketTxDataOffset)
        return fail("mbufs of " + std::to_string(g.mbuf_data_room) + " B cannot take a " +
                    std::to_string(g.framesz - kTpacketTxDataOffset) + "-byte slot");
    if (g.mbuf_data_room > UINT16_MAX) return fail("mbuf data room beyond 65535 B");
    return true;
}

bool interface_mtu(const std::string& iface, uint32_t& mtu, std::string& error) {
    if (iface.empty() || iface.size() >= IFNAMSIZ || iface.find('/') != std::string::npos) {
        // Appended, not `"..." + iface + "'"`: GCC 12 warns falsely (-Wrestrict) on that
        // temporary's move when the profile-feedback build inlines it.
        error.assign("invalid interface name '").append(iface).append("'");
        return false;
    }
    if (if_nametoindex(iface.c_str()) == 0) {
        error = "unknown interface " + iface;
        return false;
    }
    std::ifstream in("/sys/class/net/" + iface + "/mtu");
    if (!(in >> mtu) || mtu == 0) {
        error = "cannot read the MTU of " + iface;
        return false;
    }
    return true;
}

std::string af_packet_devargs(const std::string& name, const std::string& iface, unsigned qpairs,
                              const AfPacketGeometry& g) {
    return name + ",iface=" + iface + ",qpairs=" + std::to_string(qpairs) +
           ",framesz=" + std::to_string(g.framesz) + ",blocksz=" + std::to_string(g.blocksz) +
           ",framecnt=" + std::to_string(g.framecnt);
}

}  // namespace insert::ports
