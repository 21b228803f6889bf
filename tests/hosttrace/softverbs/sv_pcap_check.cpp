// Checks a capture of softverbs traffic with the shared wire-format library: every UDP
// 4791 frame must parse as well-formed RoCEv2 and carry a correct ICRC (computed over the
// IP/UDP headers as captured). Prints `roce N`, `bad_icrc N`, `malformed N` and one
// `opcode NAME N` line per opcode, and `dup_psn N`: request packets whose (destination,
// QPN, PSN) was already seen, i.e. retransmissions; exit 0 only when there is RoCE traffic and
// nothing bad.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/parser.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: sv_pcap_check FILE.pcap\n");
        return 2;
    }
    insert::capture::CaptureFile file;
    if (!file.open(argv[1])) {
        std::fprintf(stderr, "sv_pcap_check: %s\n", file.error().c_str());
        return 2;
    }
    uint64_t roce = 0, bad_icrc = 0, malformed = 0, ecn_ce = 0;
    std::map<int, uint64_t> opcodes;
    std::set<std::tuple<insert::proto::IpAddress, uint32_t, uint32_t>> seen;
    uint64_t dup_psn = 0;
    insert::capture::Frame frame;
    while (file.next(frame)) {
        if (frame.data.size() < frame.orig_len) {
            std::fprintf(stderr, "sv_pcap_check: frame %lu truncated by the capture (use -s 0)\n",
                         static_cast<unsigned long>(frame.index));
            return 2;
        }
        insert::proto::ParsedPacket p;
        const auto verdict = insert::proto::parse_frame(frame.data, p);
        if (verdict == insert::proto::Verdict::non_roce) continue;
        if (verdict == insert::proto::Verdict::malformed) {
            ++malformed;
            continue;
        }
        ++roce;
        ++opcodes[p.t.bth.opcode];
        if (p.ecn == 3) ++ecn_ce;
        if (p.info().request && !seen.emplace(p.dst_ip, p.t.bth.dest_qp, p.t.bth.psn).second)
            ++dup_psn;
        if (!insert::proto::verify_icrc(frame.data, p)) ++bad_icrc;
    }
    std::printf("roce %lu\nbad_icrc %lu\nmalformed %lu\necn_ce %lu\ndup_psn %lu\n",
                static_cast<unsigned long>(roce), static_cast<unsigned long>(bad_icrc),
                static_cast<unsigned long>(malformed), static_cast<unsigned long>(ecn_ce),
                static_cast<unsigned long>(dup_psn));
    for (const auto& [op, n] : opcodes) {
        const auto& info = insert::proto::opcode_info(static_cast<uint8_t>(op));
        std::printf("opcode 0x%02x %s_%s %lu\n", op,
                    std::string(insert::proto::transport_name(info.transport)).c_str(),
                    std::string(insert::proto::op_kind_name(info.kind)).c_str(),
                    static_cast<unsigned long>(n));
    }
    return roce > 0 && bad_icrc == 0 && malformed == 0 ? 0 : 1;
}
