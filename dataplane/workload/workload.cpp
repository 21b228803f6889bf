#include "dataplane/workload/workload.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::workload {

namespace {

using namespace insert::proto;

constexpr std::size_t kMaxFrame = 10'000;
constexpr std::size_t kCacheLine = 64;

struct Connection {
    IpAddress a, b;  // requester, responder
    uint32_t qpn_a = 0, qpn_b = 0;
    uint32_t psn = 0;    // requester's next PSN
    uint16_t sport = 0;  // symmetric source port
};

// One packet of a message: which way it goes and its transport headers.
struct Packet {
    bool to_responder = true;
    uint8_t opcode = 0;
    uint32_t psn = 0;
    uint32_t payload = 0;
    TransportHeaders extra;
};

class Emitter {
  public:
    Emitter(const WorkloadSpec& spec, const FrameSink& emit)
        : spec_(spec), emit_(emit), ts_(spec.start_ns) {}

    void send(const Connection& c, const Packet& p) {
        FrameSpec f;
        f.src_ip = p.to_responder ? c.a : c.b;
        f.dst_ip = p.to_responder ? c.b : c.a;
        f.src_port = c.sport;
        f.t = p.extra;
        f.t.bth.opcode = p.opcode;
        f.t.bth.dest_qp = p.to_responder ? c.qpn_b : c.qpn_a;
        f.t.bth.psn = p.psn & 0xFFFFFF;
        f.t.bth.pad = pad_for(p.payload);
        f.payload_len = p.payload;
        const std::size_t n = build_frame(f, buf_);
        if (n == 0) return;
        emit_(ts_, std::span<const uint8_t>(buf_.data(), n));
        ts_ += spec_.gap_ns;
    }

  private:
    const WorkloadSpec& spec_;
    const FrameSink& emit_;
    uint64_t ts_;
    std::array<uint8_t, kMaxFrame> buf_{};
};

IpAddress host_ip(uint32_t h) {
    return IpAddress::v4(0x0A000000u | (h + 1));
}

// Message number `m` on connection `c`: its packets in wire order (requests, then the
// answer) into `out`, and the connection's next PSN past it.
void plan_message(const WorkloadSpec& spec, Connection& c, uint64_t m, std::mt19937_64& rng,
                  std::vector<Packet>& out) {
    const uint32_t mtu = spec.mtu;
    const uint32_t most = std::max<uint32_t>(spec.max_message_packets, 1);
    const uint32_t most_half = std::max<uint32_t>(most / 2, 1);  // SEND and READ sizes
    auto add = [&](bool to_responder, uint8_t opcode, uint32_t psn, uint32_t payload,
                   const TransportHeaders& extra = {}) {
        out.push_back(Packet{to_responder, opcode, psn, payload, extra});
    };
    const unsigned kind = static_cast<unsigned>(rng() % 10);
    TransportHeaders ack;
    ack.aeth.syndrome = 0x1F;  // ACK, credit field "invalid"
    if (kind < 4) {            // WRITE
        const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % most);
        const uint32_t len = (pkts - 1) * mtu + 1 + static_cast<uint32_t>(rng() % mtu);
        TransportHeaders reth;
        reth.reth = {0x7F0000000000ull + m * 4096, 0x1234, len};
        for (uint32_t p = 0; p < pkts; ++p) {
            const uint32_t payload = p + 1 < pkts ? mtu : len - (pkts - 1) * mtu;
            const uint8_t opcode = pkts == 1      ? op::kWriteOnly
                                   : p == 0       ? op::kWriteFirst
                                   : p + 1 < pkts ? op::kWriteMiddle
                                                  : op::kWriteLast;
            add(true, opcode, c.psn + p, payload, p == 0 ? reth : TransportHeaders{});
        }
        c.psn += pkts;
        add(false, op::kAck, c.psn - 1, 0, ack);
    } else if (kind < 7) {  // SEND
        const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % most_half);
        for (uint32_t p = 0; p < pkts; ++p) {
            const uint8_t opcode = pkts == 1      ? op::kSendOnly
                                   : p == 0       ? op::kSendFirst
                                   : p + 1 < pkts ? op::kSendMiddle
                                                  : op::kSendLast;
            add(true, opcode, c.psn + p,
                p + 1 < pkts ? mtu : 64 + static_cast<uint32_t>(rng() % mtu));
        }
        c.psn += pkts;
        add(false, op::kAck, c.psn - 1, 0, ack);
    } else if (kind < 9) {  // READ
        const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % most_half);
        const uint32_t len = (pkts - 1) * mtu + 1 + static_cast<uint32_t>(rng() % mtu);
        TransportHeaders req;
        req.reth = {0x7E0000000000ull + m * 4096, 0x5678, len};
        add(true, op::kReadRequest, c.psn, 0, req);
        for (uint32_t p = 0; p < pkts; ++p) {
            const uint8_t opcode = pkts == 1      ? op::kReadResponseOnly
                                   : p == 0       ? op::kReadResponseFirst
                                   : p + 1 < pkts ? op::kReadResponseMiddle
                                                  : op::kReadResponseLast;
            TransportHeaders resp;
            resp.aeth.syndrome = 0x1F;
            add(false, opcode, c.psn + p, p + 1 < pkts ? mtu : len - (pkts - 1) * mtu,
                (p == 0 || p + 1 == pkts) ? resp : TransportHeaders{});
        }
        c.psn += pkts;
    } else {  // FETCH_ADD
        TransportHeaders at;
        at.atomic = {0x7D0000000000ull + m * 8, 0x9ABC, 1, 0};
        add(true, op::kFetchAdd, c.psn, 0, at);
        TransportHeaders aack;
        aack.aeth.syndrome = 0x1F;
        add(false, op::kAtomicAck, c.psn, 0, aack);
        c.psn += 1;
    }
}

// Several messages on the wire at once, on distinct connections, their packets taken in
// turn (one from each, round robin), as a NIC's send scheduler interleaves active QPs.
void emit_interleaved(const WorkloadSpec& spec, std::vector<Connection>& cs, std::mt19937_64& rng,
                      Emitter& out) {
    const auto conns = static_cast<uint32_t>(cs.size());
    struct Stream {
        uint32_t conn = 0;
        std::vector<Packet> pkts;
        std::size_t next = 0;
    };
    std::vector<uint8_t> busy(conns, 0);
    uint64_t m = 0;
    // Starts the next message on `s`; false when all are started.
    auto start = [&](Stream& s) {
        if (m >= spec.messages) return false;
        uint32_t c = static_cast<uint32_t>(m);  // every connection once first
        if (m >= conns) {
            do {
                c = static_cast<uint32_t>(rng() % conns);
            } while (busy[c]);
        }
        busy[c] = 1;
        s.conn = c;
        s.pkts.clear();
        s.next = 0;
        plan_message(spec, cs[c], m++, rng, s.pkts);
        return true;
    };
    // Fewer streams than connections, so that a free connection is always found.
    const uint32_t active = std::min<uint32_t>(spec.active, std::max<uint32_t>(conns / 2, 1));
    std::vector<Stream> streams(active);
    std::size_t live = 0;
    for (Stream& s : streams)
        if (start(s)) ++live;
    streams.resize(live);
    while (!streams.empty()) {
        for (std::size_t j = 0; j < streams.size();) {
            Stream& s = streams[j];
            out.send(cs[s.conn], s.pkts[s.next++]);
            if (s.next < s.pkts.size()) {
                ++j;
                continue;
            }
            busy[s.conn] = 0;
            if (start(s)) {
                ++j;
                continue;
            }
            std::swap(s, streams.back());  // no more messages: this stream ends
            streams.pop_back();
        }
    }
}

}  // namespace

void generate_workload(const WorkloadSpec& spec, const FrameSink& emit) {
    std::mt19937_64 rng(spec.seed);
    const uint32_t hosts = std::max<uint32_t>(spec.hosts, 2);
    const uint32_t conns = std::max<uint32_t>(spec.endpoints / 2, 1);
    std::vector<Connection> cs(conns);
    for (uint32_t i = 0; i < conns; ++i) {
        Connection& c = cs[i];
        const uint32_t ha = static_cast<uint32_t>(rng() % hosts);
        const uint32_t hb = (ha + 1 + static_cast<uint32_t>(rng() % (hosts - 1))) % hosts;
        c.a = host_ip(ha);
        c.b = host_ip(hb);
        c.qpn_a = 0x100 + 2 * i;
        c.qpn_b = 0x101 + 2 * i;
        c.psn = static_cast<uint32_t>(rng() & 0xFFFFFF);
        c.sport = static_cast<uint16_t>(49152 + i % 16384);
    }
    Emitter out(spec, emit);
    if (spec.active > 1) {
        emit_interleaved(spec, cs, rng, out);
        return;
    }
    std::vector<Packet> pkts;
    for (uint64_t m = 0; m < spec.messages; ++m) {
        // Visit every connection once before picking at random, so every endpoint exists.
        Connection& c = m < conns ? cs[m] : cs[rng() % conns];
        pkts.clear();
        plan_message(spec, c, m, rng, pkts);
        for (const Packet& p : pkts) out.send(c, p);
    }
}

CompactWorkload build_compact_workload(const WorkloadSpec& spec) {
    CompactWorkload w;
    std::vector<uint8_t>& bytes = w.bytes;
    generate_workload(spec, [&](uint64_t ts, std::span<const uint8_t> frame) {
        const std::size_t slot = w.lengths.size() * CompactWorkload::kSlot;
        bytes.resize(slot + CompactWorkload::kSlot);
        ParsedPacket p;
        std::size_t keep = frame.size();
        // Everything the parser reads lies before the payload.
        if (parse_frame(frame, p) == Verdict::roce) keep = p.payload_offset;
        std::memcpy(bytes.data() + slot, frame.data(), std::min(keep, CompactWorkload::kSlot));
        w.lengths.push_back(static_cast<uint32_t>(frame.size()));
        w.timestamps.push_back(ts);
    });
    // A NIC writes each frame to a cache-line-aligned buffer (an mbuf's data starts 128 B
    // into it), so a worker's prefetch of a frame's first two lines fetches all its
    // headers. Frames here start on a line too: from a vector's 16-byte alignment, an IPv4
    // BTH straddled two lines.
    const std::size_t used = bytes.size();
    bytes.resize(used + kMaxFrame + kCacheLine);  // the last frames' payload tail
    const auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
    w.first = (kCacheLine - address % kCacheLine) % kCacheLine;
    std::memmove(bytes.data() + w.first, bytes.data(), used);
    return w;
}

}  // namespace insert::workload
