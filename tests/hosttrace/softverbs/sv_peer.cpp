// Two-process verbs check: `sv_peer server PORT` and `sv_peer client SERVER_IP PORT` set up
// one RC QP each (QP details exchanged over TCP), then run WRITE, READ, SEND with
// immediate, FETCH_ADD and a WRITE with a bad rkey, each checked on both sides. Prints one
// line per step; exit status 0 only if every step passed. Used on loopback and between
// network namespaces, with and without injected loss.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/hosttrace/softverbs/verbs_endpoint.hpp"

using insert::softverbs::test::Endpoint;
using insert::softverbs::test::PeerInfo;

namespace {

constexpr std::size_t kBuf = 4 << 20;
constexpr uint32_t kWriteLen = 1 << 20;
constexpr uint32_t kReadOff = 2 << 20;
constexpr uint32_t kReadLen = 512 << 10;
constexpr uint32_t kSendOff = 3 << 20;
constexpr uint32_t kSendLen = 10000;
constexpr uint32_t kCounterOff = kBuf - 64;
constexpr uint32_t kImm = 0x12345678;

void pattern(uint8_t* p, std::size_t n, uint8_t seed) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(seed ^ (i * 7) ^ (i >> 9));
}

bool check_pattern(const uint8_t* p, std::size_t n, uint8_t seed) {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != static_cast<uint8_t>(seed ^ (i * 7) ^ (i >> 9))) return false;
    return true;
}

bool write_all(int fd, const void* p, std::size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    while (n) {
        const ssize_t w = write(fd, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

bool read_all(int fd, void* p, std::size_t n) {
    auto* c = static_cast<uint8_t*>(p);
    while (n) {
        const ssize_t r = read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

int report(bool ok, const char* step) {
    std::printf("%s %s\n", ok ? "ok" : "FAIL", step);
    std::fflush(stdout);
    return ok ? 0 : 1;
}

int run_server(Endpoint& ep, int conn) {
    int failures = 0;
    ibv_wc wc;
    pattern(ep.buf() + kReadOff, kReadLen, 0x5A);
    *reinterpret_cast<uint64_t*>(ep.buf() + kCounterOff) = 1000;
    if (ep.post_recv(kSendOff, kSendLen + 100, 1)) return report(false, "post_recv");
    for (;;) {
        char step = 0;
        if (!read_all(conn, &step, 1)) break;
        bool ok = false;
        switch (step) {
            case 'W':
                ok = check_pattern(ep.buf(), kWriteLen, 0x33);
                break;
            case 'S':
                ok = ep.wait(wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
                     wc.byte_len == kSendLen && (wc.wc_flags & IBV_WC_WITH_IMM) &&
                     ntohl(wc.imm_data) == kImm &&
                     check_pattern(ep.buf() + kSendOff, kSendLen, 0x77);
                break;
            case 'A':
                ok = *reinterpret_cast<uint64_t*>(ep.buf() + kCounterOff) == 1042;
                break;
            case 'Q':
                return failures;
            default:
                break;
        }
        failures += report(ok, step == 'W'   ? "server sees write"
                               : step == 'S' ? "server receives send"
                                             : "server sees fetch_add");
        const char status = ok ? 0 : 1;
        if (!write_all(conn, &status, 1)) break;
    }
    return failures + 1;  // the client went away before 'Q'
}

int run_client(Endpoint& ep, const PeerInfo& peer, int conn) {
    int failures = 0;
    ibv_wc wc;
    auto remote_step = [&](char step) {
        char status = 1;
        return write_all(conn, &step, 1) && read_all(conn, &status, 1) && status == 0;
    };
    pattern(ep.buf(), kWriteLen, 0x33);
    bool ok = ep.post_send(IBV_WR_RDMA_WRITE, 0, kWriteLen, peer.addr, peer.rkey, 1) == 0 &&
              ep.wait(wc) && wc.status == IBV_WC_SUCCESS;
    failures += report(ok, "rdma write 1 MiB");
    failures += report(remote_step('W'), "write landed");

    ok = ep.post_send(IBV_WR_RDMA_READ, kReadOff, kReadLen, peer.addr + kReadOff, peer.rkey, 2) ==
             0 &&
         ep.wait(wc) && wc.status == IBV_WC_SUCCESS &&
         check_pattern(ep.buf() + kReadOff, kReadLen, 0x5A);
    failures += report(ok, "rdma read 512 KiB");

    pattern(ep.buf() + kSendOff, kSendLen, 0x77);
    ok = ep.post_send(IBV_WR_SEND_WITH_IMM, kSendOff, kSendLen, 0, 0, 3, kImm) == 0 &&
         ep.wait(wc) && wc.status == IBV_WC_SUCCESS;
    failures += report(ok, "send with immediate");
    failures += report(remote_step('S'), "send received");

    ok = ep.post_send(IBV_WR_ATOMIC_FETCH_AND_ADD, kCounterOff, 8, peer.addr + kCounterOff,
                      peer.rkey, 4, 0, 42) == 0 &&
         ep.wait(wc) && wc.status == IBV_WC_SUCCESS &&
         *reinterpret_cast<uint64_t*>(ep.buf() + kCounterOff) == 1000;
    failures += report(ok, "fetch_add");
    failures += report(remote_step('A'), "fetch_add applied");

    ok = ep.post_send(IBV_WR_RDMA_WRITE, 0, 64, peer.addr, peer.rkey + 0x100, 5) == 0 &&
         ep.wait(wc) && wc.status == IBV_WC_REM_ACCESS_ERR;
    failures += report(ok, "bad rkey -> IBV_WC_REM_ACCESS_ERR");
    const char quit = 'Q';
    write_all(conn, &quit, 1);
    return failures;
}

}  // namespace

int main(int argc, char** argv) {
    const bool server = argc == 3 && std::strcmp(argv[1], "server") == 0;
    const bool client = argc == 4 && std::strcmp(argv[1], "client") == 0;
    if (!server && !client) {
        std::fprintf(stderr, "usage: sv_peer server PORT | sv_peer client SERVER_IP PORT\n");
        return 2;
    }
    Endpoint ep;
    if (!ep.open(0, IBV_QPT_RC, kBuf)) {
        std::fprintf(stderr, "sv_peer: %s\n", ep.error().c_str());
        return 1;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[server ? 2 : 3])));
    int conn = -1;
    if (server) {
        const int ls = socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) || listen(ls, 1)) {
            std::perror("sv_peer: listen");
            return 1;
        }
        conn = accept(ls, nullptr, nullptr);
        close(ls);
    } else {
        inet_pton(AF_INET, argv[2], &addr.sin_addr);
        conn = socket(AF_INET, SOCK_STREAM, 0);
        // The server may still be starting: retry for up to 5 s.
        int tries = 0;
        while (connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            if (++tries > 50) {
                std::perror("sv_peer: connect");
                return 1;
            }
            usleep(100000);
        }
    }
    const int one = 1;
    setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    PeerInfo mine = ep.info(), peer;
    if (!write_all(conn, &mine, sizeof(mine)) || !read_all(conn, &peer, sizeof(peer))) {
        std::fprintf(stderr, "sv_peer: exchange failed\n");
        return 1;
    }
    if (!ep.connect(peer)) {
        std::fprintf(stderr, "sv_peer: %s\n", ep.error().c_str());
        return 1;
    }
    const int failures = server ? run_server(ep, conn) : run_client(ep, peer, conn);
    close(conn);
    return failures == 0 ? 0 : 1;
}
