#include "bench/micro/workload.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"

namespace insert::bench {

namespace {

using namespace insert::proto;

constexpr std::size_t kMaxFrame = 10'000;

struct Connection {
    IpAddress a, b;  // requester, responder
    uint32_t qpn_a = 0, qpn_b = 0;
    uint32_t psn = 0;    // requester's next PSN
    uint16_t sport = 0;  // symmetric source port
};

class Emitter {
  public:
    Emitter(const WorkloadSpec& spec, const FrameSink& emit)
        : spec_(spec), emit_(emit), ts_(spec.start_ns) {}

    // One packet from `from` to `to` (dest QP `qpn`).
    void send(const Connection& c, bool to_responder, uint8_t opcode, uint32_t psn,
              uint32_t payload, const TransportHeaders& extra = {}) {
        FrameSpec f;
        f.src_ip = to_responder ? c.a : c.b;
        f.dst_ip = to_responder ? c.b : c.a;
        f.src_port = c.sport;
        f.t = extra;
        f.t.bth.opcode = opcode;
        f.t.bth.dest_qp = to_responder ? c.qpn_b : c.qpn_a;
        f.t.bth.psn = psn & 0xFFFFFF;
        f.t.bth.pad = pad_for(payload);
        f.payload_len = payload;
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
    const uint32_t mtu = spec.mtu;
    for (uint64_t m = 0; m < spec.messages; ++m) {
        // Visit every connection once before picking at random, so every endpoint exists.
        Connection& c = m < conns ? cs[m] : cs[rng() % conns];
        const unsigned kind = static_cast<unsigned>(rng() % 10);
        TransportHeaders ack;
        ack.aeth.syndrome = 0x1F;  // ACK, credit field "invalid"
        if (kind < 4) {            // WRITE, 1-4 packets
            const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % 4);
            const uint32_t len = (pkts - 1) * mtu + 1 + static_cast<uint32_t>(rng() % mtu);
            TransportHeaders reth;
            reth.reth = {0x7F0000000000ull + m * 4096, 0x1234, len};
            for (uint32_t p = 0; p < pkts; ++p) {
                const uint32_t payload = p + 1 < pkts ? mtu : len - (pkts - 1) * mtu;
                const uint8_t opcode = pkts == 1      ? op::kWriteOnly
                                       : p == 0       ? op::kWriteFirst
                                       : p + 1 < pkts ? op::kWriteMiddle
                                                      : op::kWriteLast;
                out.send(c, true, opcode, c.psn + p, payload, p == 0 ? reth : TransportHeaders{});
            }
            c.psn += pkts;
            out.send(c, false, op::kAck, c.psn - 1, 0, ack);
        } else if (kind < 7) {  // SEND, 1-2 packets
            const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % 2);
            for (uint32_t p = 0; p < pkts; ++p) {
                const uint8_t opcode = pkts == 1 ? op::kSendOnly
                                       : p == 0  ? op::kSendFirst
                                                 : op::kSendLast;
                out.send(c, true, opcode, c.psn + p,
                         p + 1 < pkts ? mtu : 64 + static_cast<uint32_t>(rng() % mtu));
            }
            c.psn += pkts;
            out.send(c, false, op::kAck, c.psn - 1, 0, ack);
        } else if (kind < 9) {  // READ, 1-2 responses
            const uint32_t pkts = 1 + static_cast<uint32_t>(rng() % 2);
            const uint32_t len = (pkts - 1) * mtu + 1 + static_cast<uint32_t>(rng() % mtu);
            TransportHeaders req;
            req.reth = {0x7E0000000000ull + m * 4096, 0x5678, len};
            out.send(c, true, op::kReadRequest, c.psn, 0, req);
            for (uint32_t p = 0; p < pkts; ++p) {
                const uint8_t opcode = pkts == 1 ? op::kReadResponseOnly
                                       : p == 0  ? op::kReadResponseFirst
                                                 : op::kReadResponseLast;
                TransportHeaders resp;
                resp.aeth.syndrome = 0x1F;
                out.send(c, false, opcode, c.psn + p, p + 1 < pkts ? mtu : len - (pkts - 1) * mtu,
                         (p == 0 || p + 1 == pkts) ? resp : TransportHeaders{});
            }
            c.psn += pkts;
        } else {  // FETCH_ADD
            TransportHeaders at;
            at.atomic = {0x7D0000000000ull + m * 8, 0x9ABC, 1, 0};
            out.send(c, true, op::kFetchAdd, c.psn, 0, at);
            TransportHeaders aack;
            aack.aeth.syndrome = 0x1F;
            out.send(c, false, op::kAtomicAck, c.psn, 0, aack);
            c.psn += 1;
        }
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
    bytes.resize(bytes.size() + kMaxFrame);  // the last frames' payload tail
    return w;
}

}  // namespace insert::bench
