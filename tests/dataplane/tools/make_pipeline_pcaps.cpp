// Writes the captures the pipeline tests replay (replay_test.py), built with the proto
// builder so that every expected counter is known by construction:
//   mixed.pcap    - the benchmark workload, small (dataplane/workload/workload.hpp)
//   hostile.pcap  - mixed traffic plus malformed frames of every reason, non-RoCE frames,
//                   a PSN storm on one endpoint and two quiet "victim" connections whose
//                   exact counters the test checks
//   many.pcap     - many short messages (record back-pressure test)
//   idle.pcap     - connections that go quiet while another one talks on (idle eviction)
//   stray.pcap    - two RC connections, each hit by one SEND from a third host
//   multisource.pcap - random traffic from many hosts to a few shared QPs
//   cnp_storm.pcap - 30000 CNPs to one QP over 3 s of capture time, and a quiet connection
//   spray.pcap    - 200000 CNPs to one QP from 200000 spoofed source IPs, and 20000 NAKs
//                   to another from 20000 more, over two seconds of capture time
// usage: make-pipeline-pcaps OUTDIR
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dataplane/capture/pcap_writer.hpp"
#include "dataplane/proto/aeth.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/workload/workload.hpp"

using namespace insert;
using namespace insert::proto;

namespace {

struct Writer {
    capture::PcapWriter pcap;
    uint64_t ts = 1'700'000'000'000'000'000ull;
    std::vector<uint8_t> buf = std::vector<uint8_t>(10000);

    void raw(std::span<const uint8_t> frame) {
        pcap.write(ts, frame);
        ts += 1000;
    }
    std::size_t build(const FrameSpec& f) { return build_frame(f, buf); }
    void frame(const FrameSpec& f) {
        const std::size_t n = build(f);
        if (n == 0) {
            std::fprintf(stderr, "make-pipeline-pcaps: cannot build opcode %u\n", f.t.bth.opcode);
            std::exit(1);
        }
        raw({buf.data(), n});
    }
};

FrameSpec roce(const char* src, const char* dst, uint32_t qpn, uint8_t opcode, uint32_t psn,
               uint32_t payload) {
    FrameSpec f;
    f.src_ip = *IpAddress::parse(src);
    f.dst_ip = *IpAddress::parse(dst);
    f.src_port = 50000;
    f.t.bth.opcode = opcode;
    f.t.bth.dest_qp = qpn;
    f.t.bth.psn = psn & 0xFFFFFF;
    f.t.bth.pad = pad_for(payload);
    f.payload_len = payload;
    if (opcode_info(opcode).ext & kReth) f.t.reth = {0x1000, 0x42, payload};
    return f;
}

// A victim connection: 10 WRITE Only of 100 bytes to (b, qb), each ACKed to (a, qa).
void victim_message(Writer& w, const char* a, uint32_t qa, const char* b, uint32_t qb,
                    uint32_t psn) {
    w.frame(roce(a, b, qb, op::kWriteOnly, psn, 100));
    FrameSpec ack = roce(b, a, qa, op::kAck, psn, 0);
    ack.t.aeth.syndrome = 0x1F;
    w.frame(ack);
}

void malformed(Writer& w) {
    // length_mismatch x5: IPv4 total length beyond the frame.
    for (int i = 0; i < 5; ++i) {
        const std::size_t n = w.build(roce("10.7.0.1", "10.7.0.2", 0x700, op::kSendOnly, i, 64));
        w.buf[16] = 0x7F;  // total length high byte (Ethernet 14 + 2)
        w.raw({w.buf.data(), n});
    }
    // truncated x7: UDP payload shorter than a BTH (UDP and IP lengths kept consistent).
    for (int i = 0; i < 7; ++i) {
        const std::size_t n = w.build(roce("10.7.0.1", "10.7.0.2", 0x700, op::kSendOnly, i, 0));
        const std::size_t cut = 14 + 20 + 8 + 6;  // 6 bytes of BTH
        w.buf[16] = 0;
        w.buf[17] = static_cast<uint8_t>(cut - 14);
        w.buf[24] = w.buf[25] = 0;  // IPv4 checksum: not checked by the parser
        w.buf[38] = 0;
        w.buf[39] = 8 + 6;  // UDP length
        (void)n;
        w.raw({w.buf.data(), cut});
    }
    // reserved_opcode x3 (IBTA 1.5's 0x1C, and RD opcodes).
    for (uint8_t opcode : {uint8_t{0x1C}, uint8_t{0x40}, uint8_t{0x5F}}) {
        const std::size_t n = w.build(roce("10.7.0.1", "10.7.0.2", 0x700, op::kSendOnly, 1, 64));
        w.buf[14 + 20 + 8] = opcode;
        w.raw({w.buf.data(), n});
    }
}

void non_roce(Writer& w) {
    // 4 ARP frames and 3 UDP frames to port 53.
    for (int i = 0; i < 4; ++i) {
        uint8_t arp[60] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0, 0, 1, 0x08, 0x06};
        w.raw(arp);
    }
    for (int i = 0; i < 3; ++i) {
        FrameSpec f = roce("10.7.0.3", "10.7.0.4", 1, op::kSendOnly, 0, 32);
        f.dst_port = 53;
        w.frame(f);
    }
}

// 3000 packets to one endpoint with random request opcodes and PSNs all over the space.
void psn_storm(Writer& w, std::mt19937& rng) {
    static constexpr uint8_t kOps[] = {op::kSendFirst, op::kSendMiddle, op::kSendLast,
                                       op::kSendOnly,  op::kWriteFirst, op::kWriteMiddle,
                                       op::kWriteLast, op::kWriteOnly,  op::kReadRequest};
    for (int i = 0; i < 3000; ++i) {
        const uint8_t opcode = kOps[rng() % std::size(kOps)];
        w.frame(roce("10.8.0.1", "10.8.0.2", 0x800, opcode, rng(),
                     opcode == op::kReadRequest ? 0 : 256));
        if (i % 10 == 0) {
            FrameSpec nak = roce("10.8.0.2", "10.8.0.1", 0x801, op::kAck, rng(), 0);
            nak.t.aeth.syndrome = 0x60;  // NAK, PSN sequence error
            w.frame(nak);
        }
    }
}

bool write_mixed(const std::string& path, uint32_t endpoints, uint64_t messages, uint64_t seed) {
    capture::PcapWriter pcap;
    if (!pcap.open(path)) return false;
    workload::WorkloadSpec spec;
    spec.endpoints = endpoints;
    spec.hosts = 16;
    spec.messages = messages;
    spec.seed = seed;
    workload::generate_workload(
        spec, [&](uint64_t ts, std::span<const uint8_t> f) { pcap.write(ts, f); });
    return pcap.close();
}

bool write_hostile(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    std::mt19937 rng(7);
    uint32_t victim_psn = 100;
    workload::WorkloadSpec spec;
    spec.endpoints = 64;
    spec.hosts = 8;
    spec.messages = 400;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> normal;
    workload::generate_workload(spec, [&](uint64_t, std::span<const uint8_t> f) {
        normal.emplace_back(0, std::vector<uint8_t>(f.begin(), f.end()));
    });
    // Interleave: normal traffic, victims, malformed, non-RoCE and the storm.
    std::size_t next = 0;
    for (int round = 0; round < 10; ++round) {
        for (int k = 0; k < 40 && next < normal.size(); ++k, ++next) w.raw(normal[next].second);
        victim_message(w, "10.9.9.1", 0x900, "10.9.9.2", 0x901, victim_psn);
        victim_message(w, "fd00::91", 0x910, "fd00::92", 0x911, victim_psn);
        ++victim_psn;
        if (round == 3) malformed(w);
        if (round == 5) non_roce(w);
        if (round == 6) psn_storm(w, rng);
    }
    for (; next < normal.size(); ++next) w.raw(normal[next].second);
    return w.pcap.close();
}

// UD SENDs from eight hosts to one UD QP (10.8.9.9, 0x900): the ip-pair shard spreads
// this endpoint over the workers.
void ud_from_eight_hosts(Writer& w) {
    for (uint32_t i = 0; i < 8; ++i) {
        const std::string a = "10.8.2." + std::to_string(i + 1);
        w.frame(roce(a.c_str(), "10.8.9.9", 0x900, op::kUdSendOnly, 0, 64));
    }
}

// Eight connections each open a WRITE (its First only) and fall silent, and a UD QP gets a
// SEND from each of eight hosts; then one more connection alone talks for 200 us; then
// the UD QP gets eight more SENDs. With --idle-timeout the eight WRITEs are evicted (a
// `timeout` event each) and the UD QP once, before its second round, whatever the worker
// count - also on workers that get no packet after them, and although each worker holds
// only some of the UD QP's senders.
bool write_idle(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    for (uint32_t i = 0; i < 8; ++i) {
        const std::string a = "10.8.0." + std::to_string(2 * i + 1);
        const std::string b = "10.8.0." + std::to_string(2 * i + 2);
        w.frame(roce(a.c_str(), b.c_str(), 0x800 + i, op::kWriteFirst, 500, 1024));
    }
    ud_from_eight_hosts(w);
    for (uint32_t k = 0; k < 100; ++k)
        victim_message(w, "10.8.1.1", 0x810, "10.8.1.2", 0x811, 7000 + k);
    ud_from_eight_hosts(w);
    return w.pcap.close();
}

// One SEND Only of 64 bytes from a to (b, qb) with its ACK to (a, qa).
void send_acked(Writer& w, const char* a, uint32_t qa, const char* b, uint32_t qb, uint32_t psn) {
    w.frame(roce(a, b, qb, op::kSendOnly, psn, 64));
    FrameSpec ack = roce(b, a, qa, op::kAck, psn, 0);
    ack.t.aeth.syndrome = 0x1F;
    w.frame(ack);
}

// The RC connection 10.0.0.1 -> (10.0.0.2, 34), SENDs PSN 100-109 each ACKed to
// (10.0.0.1, 17), and one well-formed SEND to QP 34 from 10.0.0.9 with PSN 5000 after the
// fifth; and the same around 10.0.1.x, the stray SEND between the first SEND and its ACK
// (before the connection is paired). SPEC invariant 1 and 4: the third host's packet
// changes nothing of the victims, whatever the worker count.
bool write_stray(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    for (uint32_t psn = 100; psn < 110; ++psn) {
        if (psn == 105) w.frame(roce("10.0.0.9", "10.0.0.2", 34, op::kSendOnly, 5000, 64));
        send_acked(w, "10.0.0.1", 17, "10.0.0.2", 34, psn);
    }
    w.frame(roce("10.0.1.1", "10.0.1.2", 35, op::kSendOnly, 100, 64));
    w.frame(roce("10.0.1.9", "10.0.1.2", 35, op::kSendOnly, 5000, 64));
    FrameSpec ack = roce("10.0.1.2", "10.0.1.1", 18, op::kAck, 100, 0);
    ack.t.aeth.syndrome = 0x1F;
    w.frame(ack);
    for (uint32_t psn = 101; psn < 110; ++psn) send_acked(w, "10.0.1.1", 18, "10.0.1.2", 35, psn);
    return w.pcap.close();
}

// Random RC/UC/UD/CNP traffic among eight hosts to three QPNs each, with source ports
// and PSNs from small sets: many sources per QP, colliding PSNs, pairing by every rule and
// none. SPEC invariant 1 over it (the fuzz target tests/fuzz/workers_fuzz.cpp explores
// the same shape at random).
bool write_multisource(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    std::mt19937 rng(22);
    static constexpr uint8_t kOps[] = {
        op::kSendFirst, op::kSendMiddle,  op::kSendLast,
        op::kSendOnly,  op::kWriteFirst,  op::kWriteLast,
        op::kWriteOnly, op::kReadRequest, op::kReadResponseOnly,
        op::kAck,       op::kAck,         op::kAck,
        op::kCnp,       op::kUdSendOnly,  op::kUcBase + op::kSendOnly};
    uint32_t next_psn[8][3] = {};
    for (int i = 0; i < 4000; ++i) {
        const uint32_t src = rng() % 8, dst = (src + 1 + rng() % 7) % 8, q = rng() % 3;
        const std::string a = "10.5.0." + std::to_string(src + 1);
        const std::string b = "10.5.0." + std::to_string(dst + 1);
        const uint8_t opcode = kOps[rng() % std::size(kOps)];
        // Mostly the next PSN of the destination QP, sometimes a jump back or ahead.
        uint32_t& psn = next_psn[dst][q];
        const uint32_t jitter = rng() % 16;
        const uint32_t p = jitter < 12 ? psn++ : psn + jitter * 37 - 300;
        FrameSpec f = roce(a.c_str(), b.c_str(), 0x40 + q, opcode, p,
                           opcode == op::kReadRequest || opcode == op::kAck ? 0 : 256);
        f.src_port = static_cast<uint16_t>(50000 + rng() % 2);
        if (opcode == op::kAck) f.t.aeth.syndrome = (rng() % 8 == 0) ? 0x60 : 0x1F;
        if (opcode == op::kCnp) f.payload_len = 0, f.t.bth.pad = 0;
        w.frame(f);
        if (rng() % 64 == 0) w.ts += 20'000'000;  // quiet spells: idle eviction
    }
    return w.pcap.close();
}

// 30000 CNPs from 10.6.0.2 to (10.6.0.1, 0x600), 100 us apart from a whole second of
// capture time on: 10000 in each of three seconds; and ten acknowledged SENDs beside them.
bool write_cnp_storm(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    for (uint32_t i = 0; i < 30000; ++i) {
        FrameSpec cnp = roce("10.6.0.2", "10.6.0.1", 0x600, op::kCnp, 0, 0);
        cnp.payload_len = 0;
        cnp.t.bth.pad = 0;
        w.frame(cnp);
        w.ts += 99'000;  // w.frame() adds 1 us
        if (i % 3000 == 0) send_acked(w, "10.6.1.1", 0x610, "10.6.1.2", 0x611, 200 + i / 3000);
    }
    return w.pcap.close();
}

// Issue 37's spray: 200000 CNPs to (10.20.0.1, 0x2000), each from a source IP of its own
// (10.128.0.0 + i), 5 us apart from half a second into a whole second: 100000 in each of
// two one-second windows. Every tenth CNP is followed by a sequence NAK to (10.20.0.2,
// 0x2001) from one more source of its own (10.160.0.0 + i): 10000 in each window, to a QP
// that never pairs (an unknown_qp event per source, per part). The frames are in time
// order, so every worker count sees the same windows.
bool write_spray(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    w.ts += 500'000'000;
    const auto ip = [](uint32_t base, uint32_t i) {
        const uint32_t a = base + i;
        return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xFF) + "." +
               std::to_string((a >> 8) & 0xFF) + "." + std::to_string(a & 0xFF);
    };
    for (uint32_t i = 0; i < 200000; ++i) {
        const uint64_t at = w.ts;
        FrameSpec cnp = roce(ip(0x0A800000u, i).c_str(), "10.20.0.1", 0x2000, op::kCnp, i, 0);
        cnp.payload_len = 0;
        cnp.t.bth.pad = 0;
        w.frame(cnp);
        if (i % 10 == 0) {
            FrameSpec nak =
                roce(ip(0x0AA00000u, i / 10).c_str(), "10.20.0.2", 0x2001, op::kAck, i / 10, 0);
            nak.t.aeth.syndrome = aeth_nak(NakCode::psn_seq_error);
            w.frame(nak);
        }
        w.ts = at + 5000;
    }
    return w.pcap.close();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make-pipeline-pcaps OUTDIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    const bool ok = write_mixed(dir + "/mixed.pcap", 400, 5000, 1) &&
                    write_mixed(dir + "/many.pcap", 2000, 40000, 2) &&
                    write_hostile(dir + "/hostile.pcap") && write_idle(dir + "/idle.pcap") &&
                    write_stray(dir + "/stray.pcap") &&
                    write_multisource(dir + "/multisource.pcap") &&
                    write_cnp_storm(dir + "/cnp_storm.pcap") && write_spray(dir + "/spray.pcap");
    if (!ok) {
        std::fprintf(stderr, "make-pipeline-pcaps: cannot write into %s\n", dir.c_str());
        return 1;
    }
    return 0;
}
