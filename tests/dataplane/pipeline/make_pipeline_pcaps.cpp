// Writes the captures the pipeline tests replay (replay_test.py), built with the proto
// builder so that every expected counter is known by construction:
//   mixed.pcap    - the benchmark workload, small (bench/micro/workload.hpp)
//   hostile.pcap  - mixed traffic plus malformed frames of every reason, non-RoCE frames,
//                   a PSN storm on one endpoint and two quiet "victim" connections whose
//                   exact counters the test checks
//   many.pcap     - many short messages (record back-pressure test)
//   idle.pcap     - connections that go quiet while another one talks on (idle eviction)
// usage: make-pipeline-pcaps OUTDIR
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/micro/workload.hpp"
#include "dataplane/capture/pcap_writer.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/opcodes.hpp"

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
    bench::WorkloadSpec spec;
    spec.endpoints = endpoints;
    spec.hosts = 16;
    spec.messages = messages;
    spec.seed = seed;
    bench::generate_workload(spec,
                             [&](uint64_t ts, std::span<const uint8_t> f) { pcap.write(ts, f); });
    return pcap.close();
}

bool write_hostile(const std::string& path) {
    Writer w;
    if (!w.pcap.open(path)) return false;
    std::mt19937 rng(7);
    uint32_t victim_psn = 100;
    bench::WorkloadSpec spec;
    spec.endpoints = 64;
    spec.hosts = 8;
    spec.messages = 400;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> normal;
    bench::generate_workload(spec, [&](uint64_t, std::span<const uint8_t> f) {
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

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make-pipeline-pcaps OUTDIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    const bool ok = write_mixed(dir + "/mixed.pcap", 400, 5000, 1) &&
                    write_mixed(dir + "/many.pcap", 2000, 40000, 2) &&
                    write_hostile(dir + "/hostile.pcap") && write_idle(dir + "/idle.pcap");
    if (!ok) {
        std::fprintf(stderr, "make-pipeline-pcaps: cannot write into %s\n", dir.c_str());
        return 1;
    }
    return 0;
}
