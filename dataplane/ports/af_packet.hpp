// Port settings derived from the interface MTU (DESIGN.md "Inline over Linux interfaces").
// The af_packet PMD copies each frame from a PACKET_MMAP ring slot (framesz) into an mbuf;
// a slot too small truncates frames in the kernel, an mbuf too small makes the PMD drop
// them, and a block that does not hold a whole number of slots makes the ring setup fail
// - several of these silently, which is why they are derived here and checked at start.
// Pure functions (they read /sys only): unit-tested without EAL.
#pragma once

#include <cstdint>
#include <string>

namespace insert::ports {

// Kernel TPACKET_V2 layout (linux/if_packet.h, net/packet/af_packet.c tpacket_rcv()):
// the MAC header of a received frame starts at TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14 =
// 66 bytes into its slot; the PMD's transmit data starts 32 bytes in.
constexpr uint32_t kTpacketRxOverhead = 80;    // slot bytes before the network header
constexpr uint32_t kTpacketTxDataOffset = 32;  // TPACKET2_HDRLEN - sizeof(sockaddr_ll)
constexpr uint32_t kTpacketAlign = 16;         // TPACKET_ALIGNMENT: slot sizes are multiples
constexpr uint32_t kPageSize = 4096;           // blocks are whole pages
constexpr uint32_t kL2Overhead = 14 + 2 * 4;   // Ethernet + up to two VLAN tags (SPEC 1)
constexpr uint32_t kSlotGranule = 2048;        // 1500 -> 2048 (the PMD default), 9000 -> 10240
constexpr uint32_t kMbufGranule = 4096;        // 9000 -> 12288, the size that worked in the trial
constexpr uint32_t kDefaultFrameCount = 512;   // PACKET_MMAP slots per ring (per queue)
constexpr uint32_t kMbufHeadroom = 128;        // RTE_PKTMBUF_HEADROOM (Debian's build)

struct AfPacketGeometry {
    uint32_t mtu = 1500;      // L3 MTU of the interface
    uint32_t framesz = 2048;  // PACKET_MMAP slot
    uint32_t blocksz = 4096;  // PACKET_MMAP block (whole slots, whole pages)
    uint32_t framecnt = kDefaultFrameCount;
    uint32_t mbuf_data_room = 4096;  // headroom + the largest frame a slot can hold

    uint32_t max_frame() const { return mtu + kL2Overhead; }
};

// The settings for an interface of `mtu`.
AfPacketGeometry af_packet_geometry(uint32_t mtu);

// Every constraint the kernel and the PMD place on the settings, and that the largest
// frame of the MTU crosses whole; false and a one-line `error` naming the broken one.
bool check_geometry(const AfPacketGeometry& g, std::string& error);

// True and `mtu` when the Linux interface exists; else false and "unknown interface X".
bool interface_mtu(const std::string& iface, uint32_t& mtu, std::string& error);

// "net_af_packet0,iface=veth1,qpairs=2,framesz=10240,blocksz=20480,framecnt=512"
std::string af_packet_devargs(const std::string& name, const std::string& iface, unsigned qpairs,
                              const AfPacketGeometry& g);

}  // namespace insert::ports
