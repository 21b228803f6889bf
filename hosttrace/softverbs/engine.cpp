#include "hosttrace/softverbs/engine.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/byte_order.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/parser.hpp"
#include "hosttrace/softverbs/context.hpp"
#include "hosttrace/softverbs/protocol.hpp"
#include "hosttrace/softverbs/socket.hpp"

namespace insert::softverbs {

namespace {

uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The longest the thread sleeps without a timer: bounds how late a lost doorbell or a
// missed deadline could be noticed.
constexpr uint64_t kMaxSleepNs = 50'000'000;
constexpr uint8_t kEcnCe = 3;

// Writes Ethernet/IPv4/UDP headers in front of a received UDP payload so the shared
// frame parser and ICRC check see the packet as it was on the wire. The kernel does not
// hand us the IPv4 ID and flags: softverbs senders always use ID 0 with DF (see socket.cpp).
void write_synthetic_headers(uint8_t* f, uint32_t udp_payload_len, uint32_t src_ipv4,
                             uint16_t src_port, uint32_t dst_ipv4, uint8_t tos) {
    std::memset(f, 0, 12);
    proto::store_be16(f + 12, 0x0800);
    uint8_t* ip = f + 14;
    ip[0] = 0x45;
    ip[1] = tos;
    proto::store_be16(ip + 2, static_cast<uint16_t>(20 + 8 + udp_payload_len));
    proto::store_be16(ip + 4, 0);
    proto::store_be16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    proto::store_be16(ip + 10, 0);
    proto::store_be32(ip + 12, src_ipv4);
    proto::store_be32(ip + 16, dst_ipv4);
    uint8_t* udp = ip + 20;
    proto::store_be16(udp, src_port);
    proto::store_be16(udp + 2, proto::kRoceV2Port);
    proto::store_be16(udp + 4, static_cast<uint16_t>(8 + udp_payload_len));
    proto::store_be16(udp + 6, 0);
}

}  // namespace

Engine::Engine(Context& ctx) : ctx_(ctx) {
    tx_.resize(kBatch);
    held_.resize(16);
    rx_bufs_.resize(kBatch);
}

Engine::~Engine() {
    stop();
    if (fd_ >= 0) close(fd_);
    if (doorbell_fd_ >= 0) close(doorbell_fd_);
}

int Engine::start(std::string& error) {
    uint64_t seed = ctx_.config.seed;
    if (!seed) seed = monotonic_ns() ^ (static_cast<uint64_t>(getpid()) << 32);
    faults_.configure(ctx_.config, seed);
    fd_ = open_roce_socket(ctx_.device->ipv4, proto::kRoceV2Port, true, error);
    if (fd_ < 0) return -fd_;
    doorbell_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (doorbell_fd_ < 0) {
        error = std::string("eventfd: ") + std::strerror(errno);
        return errno;
    }
    now_ns_ = monotonic_ns();
    thread_ = std::thread([this] { run(); });
    return 0;
}

void Engine::stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(doorbell_fd_, &one, sizeof(one));
    thread_.join();
    if (ctx_.config.debug) {
        std::fprintf(stderr,
                     "softverbs %s: tx %lu rx %lu bad_icrc %lu malformed %lu unknown_qp %lu "
                     "drops_injected %lu ecn_injected %lu ecn_ce_rx %lu cnps %lu\n",
                     ctx_.device->dev.name, counters_.tx_pkts, counters_.rx_pkts,
                     counters_.rx_bad_icrc, counters_.rx_malformed, counters_.rx_unknown_qp,
                     counters_.injected_drops, counters_.injected_ecn, counters_.rx_ecn_ce,
                     counters_.cnps_sent);
    }
}

void Engine::kick() {
    work_pending_.store(true);
    if (sleeping_.exchange(false)) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = write(doorbell_fd_, &one, sizeof(one));
    }
}

bool Engine::iterate(int& received) {
    work_pending_.store(false);
    bool busy;
    {
        std::lock_guard guard(ctx_.lock);
        now_ns_ = monotonic_ns();
        receive_batch(received);
        now_ns_ = monotonic_ns();
        busy = service_qps();
    }
    flush();
    release_held(false);
    return busy;
}

bool Engine::progress() {
    if (!thread_.joinable() || !run_lock_.try_lock()) return false;
    int received = 0;
    iterate(received);
    run_lock_.unlock();
    return true;
}

void Engine::run() {
    while (!stop_.load(std::memory_order_relaxed)) {
        int received = 0;
        bool busy;
        uint64_t deadline = 0;
        {
            std::lock_guard run(run_lock_);
            busy = iterate(received);
            if (received == 0 && !busy) deadline = next_deadline();
        }
        if (received == 0 && !busy) sleep_until_work(deadline);
    }
    std::lock_guard run(run_lock_);
    release_held(true);
    flush();
}

void Engine::sleep_until_work(uint64_t deadline_ns) {
    sleeping_.store(true);
    if (work_pending_.load() || stop_.load()) {
        sleeping_.store(false);
        return;
    }
    const uint64_t now = monotonic_ns();
    uint64_t wait = kMaxSleepNs;
    if (deadline_ns) wait = deadline_ns > now ? std::min(deadline_ns - now, kMaxSleepNs) : 0;
    pollfd fds[2] = {{fd_, POLLIN, 0}, {doorbell_fd_, POLLIN, 0}};
    timespec ts{static_cast<time_t>(wait / 1000000000ull), static_cast<long>(wait % 1000000000ull)};
    ppoll(fds, 2, &ts, nullptr);
    sleeping_.store(false);
    if (fds[1].revents & POLLIN) {
        uint64_t v;
        [[maybe_unused]] ssize_t n = read(doorbell_fd_, &v, sizeof(v));
    }
}

uint64_t Engine::next_deadline() {
    uint64_t d = 0;
    auto take = [&d](uint64_t t) {
        if (t && (!d || t < d)) d = t;
    };
    {
        std::lock_guard guard(ctx_.lock);
        for (Qp* qp : ctx_.live_qps) {
            take(qp->deadline_ns);
            take(qp->resume_ns);
        }
    }
    for (uint32_t i = 0; i < held_count_; ++i) take(held_[i].due_ns ? held_[i].due_ns : now_ns_);
    return d;
}

void Engine::receive_batch(int& received) {
    mmsghdr msgs[kBatch];
    iovec iov[kBatch];
    sockaddr_in from[kBatch];
    alignas(cmsghdr) uint8_t control[kBatch][64];
    for (uint32_t i = 0; i < kBatch; ++i) {
        iov[i] = {rx_bufs_[i].data() + kFrameHeadroom, kMaxUdpPayload};
        msgs[i].msg_hdr = {};
        msgs[i].msg_hdr.msg_name = &from[i];
        msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = control[i];
        msgs[i].msg_hdr.msg_controllen = sizeof(control[i]);
    }
    const int n = recvmmsg(fd_, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;
    received = n;
    for (int i = 0; i < n; ++i) {
        uint8_t tos = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) tos = *CMSG_DATA(c);
        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            ++counters_.rx_malformed;
            continue;
        }
        dispatch(rx_bufs_[i].data(), msgs[i].msg_len, from[i], tos);
    }
}

void Engine::dispatch(uint8_t* frame, uint32_t len, const sockaddr_in& from, uint8_t tos) {
    ++counters_.rx_pkts;
    write_synthetic_headers(frame, len, ntohl(from.sin_addr.s_addr), ntohs(from.sin_port),
                            ctx_.device->ipv4, tos);
    const std::span<const uint8_t> f(frame, kFrameHeadroom + len);
    proto::ParsedPacket p;
    if (proto::parse_frame(f, p) != proto::Verdict::roce) {
        ++counters_.rx_malformed;
        return;
    }
    if (ctx_.config.verify_icrc && !proto::verify_icrc(f, p)) {
        ++counters_.rx_bad_icrc;
        return;
    }
    const proto::OpcodeInfo& info = p.info();
    Qp* qp = find_qp(ctx_, p.t.bth.dest_qp);
    if (!qp) {
        ++counters_.rx_unknown_qp;
        return;
    }
    if ((tos & 3) == kEcnCe) {
        ++counters_.rx_ecn_ce;
        if (info.transport != proto::Transport::cnp) qp->cnp_pending = true;
    }
    Inbound in{p, frame + p.payload_offset, static_cast<uint32_t>(p.payload_len),
               ntohl(from.sin_addr.s_addr)};
    switch (info.transport) {
        case proto::Transport::cnp:
            ++qp->cnps_received;
            return;
        case proto::Transport::ud:
            ud_receive(*this, *qp, in);
            return;
        case proto::Transport::uc:
            if (qp->type != IBV_QPT_UC || in.src_ipv4 != qp->remote_ipv4) {
                ++counters_.rx_wrong_state;
                return;
            }
            uc_receive(*this, *qp, in);
            return;
        case proto::Transport::rc:
            if (qp->type != IBV_QPT_RC || in.src_ipv4 != qp->remote_ipv4) {
                ++counters_.rx_wrong_state;
                return;
            }
            qp->peer_heard = true;
            if (info.request)
                responder_receive(*this, *qp, in);
            else
                requester_receive(*this, *qp, in);
            return;
        default:
            ++counters_.rx_wrong_state;
            return;
    }
}

bool Engine::service_qps() {
    bool busy = false;
    for (Qp* qp : ctx_.live_qps) {
        requester_timers(*this, *qp);
        busy |= responder_transmit(*this, *qp);
        busy |= requester_transmit(*this, *qp);
    }
    return busy;
}

void Engine::emit(Qp& qp, uint32_t dst_ipv4, proto::TransportHeaders& t, const Gather& g) {
    if (tx_count_ == tx_.size()) flush();
    TxSlot& s = tx_[tx_count_];
    proto::FrameSpec spec;
    spec.src_ip = proto::IpAddress::v4(ctx_.device->ipv4);
    spec.dst_ip = proto::IpAddress::v4(dst_ipv4);
    spec.src_port = qp.src_port;
    spec.t = t;
    const uint32_t len = g.total();
    spec.t.bth.pad = proto::pad_for(len);
    spec.payload_len = len;
    if (g.count == 1) {
        spec.payload = g.ranges[0].ptr;
    } else {
        uint32_t off = 0;
        for (uint32_t i = 0; i < g.count; ++i) {
            std::memcpy(scratch_ + off, g.ranges[i].ptr, g.ranges[i].len);
            off += g.ranges[i].len;
        }
        spec.payload = scratch_;
    }
    const std::size_t n = proto::build_frame(spec, std::span<uint8_t>(s.frame, sizeof(s.frame)));
    if (n <= kFrameHeadroom) {
        ++counters_.tx_errors;
        return;
    }
    s.fd = qp.tx_fd >= 0 ? qp.tx_fd : fd_;
    s.len = static_cast<uint32_t>(n - kFrameHeadroom);
    s.dst_ipv4 = dst_ipv4;
    s.tos = kRoceTos;
    if (faults_.mark_ce()) {
        s.tos = static_cast<uint8_t>((kRoceTos & ~3) | kEcnCe);
        ++counters_.injected_ecn;
    }
    const FaultAction action = faults_.decide();
    switch (action) {
        case FaultAction::drop:
            ++counters_.injected_drops;
            return;
        case FaultAction::reorder:
        case FaultAction::delay:
            if (held_count_ < held_.size()) {
                held_[held_count_].due_ns = action == FaultAction::delay
                                                ? now_ns_ + uint64_t{ctx_.config.delay_us} * 1000
                                                : 0;
                std::memcpy(&held_[held_count_].slot, &s, offsetof(TxSlot, frame) + n);
                ++held_count_;
                return;
            }
            break;
        case FaultAction::send:
            break;
    }
    ++tx_count_;
    // A reordered packet goes out right after the one that followed it.
    for (uint32_t i = 0; i < held_count_;) {
        if (held_[i].due_ns == 0 && tx_count_ < tx_.size()) {
            const Held& h = held_[i];
            std::memcpy(&tx_[tx_count_], &h.slot,
                        offsetof(TxSlot, frame) + kFrameHeadroom + h.slot.len);
            ++tx_count_;
            held_[i] = held_[--held_count_];
        } else {
            ++i;
        }
    }
}

void Engine::release_held(bool all) {
    for (uint32_t i = 0; i < held_count_;) {
        if (all || held_[i].due_ns <= now_ns_) {
            if (tx_count_ == tx_.size()) flush();
            const Held& h = held_[i];
            std::memcpy(&tx_[tx_count_], &h.slot,
                        offsetof(TxSlot, frame) + kFrameHeadroom + h.slot.len);
            ++tx_count_;
            held_[i] = held_[--held_count_];
        } else {
            ++i;
        }
    }
    flush();
}

void Engine::flush() {
    uint32_t start = 0;
    while (start < tx_count_) {
        // sendmmsg takes one socket: send runs of slots that share one.
        uint32_t end = start;
        while (end < tx_count_ && tx_[end].fd == tx_[start].fd) ++end;
        mmsghdr msgs[kBatch];
        iovec iov[kBatch];
        sockaddr_in to[kBatch];
        alignas(cmsghdr) uint8_t control[kBatch][CMSG_SPACE(sizeof(int))];
        const uint32_t count = end - start;
        for (uint32_t i = 0; i < count; ++i) {
            TxSlot& s = tx_[start + i];
            iov[i] = {s.frame + kFrameHeadroom, s.len};
            to[i] = {};
            to[i].sin_family = AF_INET;
            to[i].sin_port = htons(proto::kRoceV2Port);
            to[i].sin_addr.s_addr = htonl(s.dst_ipv4);
            msgs[i].msg_hdr = {};
            msgs[i].msg_hdr.msg_name = &to[i];
            msgs[i].msg_hdr.msg_namelen = sizeof(to[i]);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            if (s.tos != kRoceTos) {
                msgs[i].msg_hdr.msg_control = control[i];
                msgs[i].msg_hdr.msg_controllen = CMSG_SPACE(sizeof(int));
                cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr);
                c->cmsg_level = IPPROTO_IP;
                c->cmsg_type = IP_TOS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                const int tos = s.tos;
                std::memcpy(CMSG_DATA(c), &tos, sizeof(tos));
            }
        }
        uint32_t sent = 0;
        while (sent < count) {
            const int r = sendmmsg(tx_[start].fd, msgs + sent, count - sent, 0);
            if (r < 0) {
                if (errno == EINTR) continue;
                // The packet is lost like any other: go-back-N recovers it.
                ++counters_.tx_errors;
                ++sent;
                continue;
            }
            sent += static_cast<uint32_t>(r);
            counters_.tx_pkts += static_cast<uint64_t>(r);
        }
        start = end;
    }
    tx_count_ = 0;
}

}  // namespace insert::softverbs
