// libFuzzer target for the wire-format parser (SPEC invariant 4: hostile input never
// crashes or reads out of bounds). Every input is one Ethernet frame; the checks below
// turn a wrong-but-silent verdict into a crash the fuzzer reports.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "dataplane/proto/icrc.hpp"
#include "dataplane/proto/opcodes.hpp"
#include "dataplane/proto/parser.hpp"

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    using namespace insert::proto;
    const std::span<const uint8_t> frame(data, size);
    ParsedPacket p;
    const Verdict v = parse_frame(frame, p);
    check(v == p.verdict);
    check((v == Verdict::malformed) == (p.malformed != Malformed::none));
    check(may_be_roce(frame) || v == Verdict::non_roce);  // the workers' pre-parse filter
    if (v != Verdict::roce) return 0;

    // A well-formed packet's offsets lie inside the frame and add up as SPEC.md says.
    const OpcodeInfo& info = p.info();
    check(info.valid);
    check(p.dst_port == kRoceV2Port);
    check(p.payload_len >= 0);
    check(p.bth_offset == p.l4_offset + 8u);
    check(p.payload_offset == p.bth_offset + kBthLen + info.ext_len);
    check(p.payload_offset + static_cast<uint32_t>(p.payload_len) + p.t.bth.pad == p.icrc_offset);
    check(p.icrc_offset + kIcrcLen == p.l4_offset + p.udp_len);
    check(p.icrc_offset + kIcrcLen <= size);
    check(p.t.ext == info.ext);
    check(p.t.bth.dest_qp <= 0xFFFFFF && p.t.bth.psn <= 0xFFFFFF && p.t.bth.pad <= 3);

    // The ICRC reads exactly the bytes the offsets name (ASan checks the reads).
    const uint32_t icrc = compute_icrc(frame, p);
    check(verify_icrc(frame, p) == (icrc == wire_icrc(frame, p)));

    // Parsing is a pure function of the bytes.
    ParsedPacket again;
    check(parse_frame(frame, again) == Verdict::roce);
    check(again.payload_len == p.payload_len && again.t.bth.psn == p.t.bth.psn);
    return 0;
}
