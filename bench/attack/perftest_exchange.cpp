#include "bench/attack/perftest_exchange.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace insert::attack {

namespace {

// A peer that stops answering must not hang the attacker: every read waits at most this.
constexpr int kReadTimeoutMs = 15000;

bool write_all(int fd, const void* data, std::size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
        const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool read_exact(int fd, void* data, std::size_t n) {
    auto* p = static_cast<uint8_t*>(data);
    while (n > 0) {
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, kReadTimeoutMs);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        const ssize_t r = ::recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

}  // namespace

std::array<char, kKeyRecordSize> format_key_record(const PerftestDest& d) {
    std::array<char, kKeyRecordSize> rec{};
    int n =
        std::snprintf(rec.data(), rec.size(), "%04x:%04x:%06x:%06x:%08x:%016llx:", d.lid & 0xFFFF,
                      d.out_reads & 0xFFFF, d.qpn & 0xFFFFFF, d.psn & 0xFFFFFF, d.rkey,
                      static_cast<unsigned long long>(d.vaddr));
    for (uint8_t b : d.gid) n += std::snprintf(rec.data() + n, rec.size() - n, "%02x:", b);
    std::snprintf(rec.data() + n, rec.size() - n, "%08x:", d.srqn);
    return rec;
}

bool parse_key_record(const std::array<char, kKeyRecordSize>& rec, PerftestDest& d) {
    if (rec.back() != '\0') return false;
    unsigned lid, reads, qpn, psn, rkey, srqn;
    unsigned long long va;
    unsigned g[16];
    const int got = std::sscanf(rec.data(),
                                "%x:%x:%x:%x:%x:%llx:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:"
                                "%x:%x:",
                                &lid, &reads, &qpn, &psn, &rkey, &va, &g[0], &g[1], &g[2], &g[3],
                                &g[4], &g[5], &g[6], &g[7], &g[8], &g[9], &g[10], &g[11], &g[12],
                                &g[13], &g[14], &g[15], &srqn);
    if (got != 23) return false;
    d.lid = lid;
    d.out_reads = reads;
    d.qpn = qpn;
    d.psn = psn;
    d.rkey = rkey;
    d.vaddr = va;
    for (int i = 0; i < 16; ++i) d.gid[i] = static_cast<uint8_t>(g[i]);
    d.srqn = srqn;
    return true;
}

PerftestClient::~PerftestClient() {
    if (fd_ >= 0) ::close(fd_);
}

bool PerftestClient::fail(const std::string& what) {
    error_ = what;
    return false;
}

bool PerftestClient::connect(const std::string& server_ip, uint16_t port,
                             std::chrono::milliseconds limit) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    if (::inet_pton(AF_INET, server_ip.c_str(), &sa.sin_addr) != 1)
        return fail("not an IPv4 address: " + server_ip);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int last_errno = 0;
    do {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) return fail(std::string("socket: ") + std::strerror(errno));
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
            const int one = 1;
            ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            return true;
        }
        last_errno = errno;
        ::close(fd_);
        fd_ = -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } while (std::chrono::steady_clock::now() < deadline);
    return fail("cannot connect to " + server_ip + ":" + std::to_string(port) + ": " +
                std::strerror(last_errno));
}

bool PerftestClient::exchange(const void* mine, void* theirs, std::size_t n, const char* what) {
    if (!write_all(fd_, mine, n)) return fail(std::string("sending ") + what + " failed");
    if (!read_exact(fd_, theirs, n))
        return fail(std::string("the server did not answer the ") + what);
    return true;
}

bool PerftestClient::setup(const std::string& version, int mtu_code) {
    char mine_version[16] = {};
    char their_version[16];
    std::strncpy(mine_version, version.c_str(), sizeof mine_version - 1);
    if (!exchange(mine_version, their_version, sizeof mine_version, "version")) return false;
    // perftest's defaults: a 4 KiB cycle buffer, 64-byte cache lines; the larger wins.
    const uint32_t sys[2] = {htonl(4096), htonl(64)};
    uint32_t their_sys[2];
    if (!exchange(&sys[0], &their_sys[0], 4, "cycle buffer size")) return false;
    if (!exchange(&sys[1], &their_sys[1], 4, "cache line size")) return false;
    char mtu[2] = {static_cast<char>('0' + mtu_code), 0};
    char their_mtu[2];
    return exchange(mtu, their_mtu, sizeof mtu, "MTU");
}

bool PerftestClient::hand_shake(const PerftestDest& mine, PerftestDest& theirs) {
    const auto rec = format_key_record(mine);
    std::array<char, kKeyRecordSize> got;
    if (!exchange(rec.data(), got.data(), rec.size(), "QP record")) return false;
    if (!parse_key_record(got, theirs)) return fail("the server's QP record does not parse");
    return true;
}

bool PerftestClient::finish(const PerftestDest& mine, uint64_t size, uint64_t iters) {
    PerftestDest ignored;
    if (!hand_shake(mine, ignored)) return false;
    // Report fields are exchanged one by one, big-endian (doubles as their bit pattern).
    const uint64_t report[5] = {htobe64(size), htobe64(iters), 0, 0, 0};
    uint64_t theirs[5];
    for (int i = 0; i < 5; ++i)
        if (!exchange(&report[i], &theirs[i], 8, "bandwidth report")) return false;
    if (!hand_shake(mine, ignored)) return false;
    char done[5] = {'d', 'o', 'n', 'e', 0};
    char their_done[5];
    return exchange(done, their_done, sizeof done, "closing message");
}

}  // namespace insert::attack
