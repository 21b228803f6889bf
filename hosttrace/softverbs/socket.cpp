#include "hosttrace/softverbs/socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace insert::softverbs {

namespace {

// Large buffers absorb a window of 4 KB packets; as root the force variants go past
// net.core.rmem_max, otherwise the kernel caps the request silently.
constexpr int kSocketBuffer = 16 << 20;

void set_buffer(int fd, int force_opt, int opt) {
    const int size = kSocketBuffer;
    if (setsockopt(fd, SOL_SOCKET, force_opt, &size, sizeof(size)) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &size, sizeof(size));
}

}  // namespace

int open_roce_socket(uint32_t ipv4, uint16_t port, bool receive, std::string& error) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return -errno;
    }
    set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    if (receive) set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    // The ICRC covers the IPv4 identification and flags. An unconnected socket with
    // path-MTU discovery "do" sends DF and identification 0 (ip_select_ident), the values
    // softverbs computes the ICRC with; DF also makes an oversized packet an error
    // instead of a fragment, which RoCE does not allow.
    const int pmtu = IP_PMTUDISC_DO;
    const int tos = kRoceTos;
    const int one = 1;
    if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) != 0 ||
        setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) != 0 ||
        (receive && setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) != 0)) {
        error = std::string("setsockopt: ") + std::strerror(errno);
        const int e = errno;
        close(fd);
        return -e;
    }
    // RoCEv2 NICs send a zero UDP checksum (the ICRC protects the packet); do the same.
    setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(ipv4);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        const int e = errno;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
        error = std::string("bind ") + text + ":" + std::to_string(port) + ": " + std::strerror(e);
        close(fd);
        return -e;
    }
    return fd;
}

}  // namespace insert::softverbs
