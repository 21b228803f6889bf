// libFuzzer target for the state engine (SPEC invariant 4): every 12 input bytes become one
// well-formed RoCEv2 packet between four hosts and eight QPs, so the fuzzer explores PSN
// storms, reordering, NAK/ACK mixes, CM exchanges and table overflow rather than parser
// rejects (the parser has its own target). A tiny table and idle timeout force eviction.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/engine.hpp"

namespace {

class CountingSink : public insert::state::RecordSink {
  public:
    bool push(const insert::state::Record& r) override {
        // Refuse some records to exercise the engine's drop accounting.
        return (++n_ % 97) != 0 || r.type != insert::state::RecordType::event;
    }

  private:
    uint64_t n_ = 0;
};

constexpr std::size_t kBytesPerPacket = 12;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace insert;
    CountingSink sink;
    state::EngineConfig cfg;
    cfg.max_endpoints = 6;
    cfg.idle_timeout_ns = 5000;
    std::string error;
    auto engine = state::Engine::create(cfg, sink, error);
    if (!engine) __builtin_trap();

    // Packets go to the engine in bursts of up to kBurst (the lookahead path), cut short
    // before every tick/report as the worker does; each packet keeps its own frame buffer
    // because a parsed packet points into it.
    constexpr std::size_t kBurst = 24;
    std::vector<std::vector<uint8_t>> frames(kBurst, std::vector<uint8_t>(9000));
    proto::ParsedPacket parsed[kBurst];
    uint64_t stamps[kBurst];
    std::size_t pending = 0;
    const auto flush = [&] {
        engine->process_burst(parsed, stamps, static_cast<unsigned>(pending));
        pending = 0;
    };
    uint8_t mad[256] = {};
    uint64_t ts = 0;
    for (std::size_t off = 0; off + kBytesPerPacket <= size; off += kBytesPerPacket) {
        const uint8_t* b = data + off;
        proto::FrameSpec s;
        s.src_ip = proto::IpAddress::v4(0x0A000001u + (b[0] & 3));
        s.dst_ip = proto::IpAddress::v4(0x0A000001u + ((b[0] >> 2) & 3));
        s.t.bth.opcode = b[1];
        if (!proto::opcode_info(b[1]).valid) s.t.bth.opcode = b[1] & 0x1F;  // fold onto RC
        if (!proto::opcode_info(s.t.bth.opcode).valid) continue;
        s.t.bth.dest_qp = (b[0] >> 4) & 7;
        s.t.bth.psn = (uint32_t{b[2]} << 16 | uint32_t{b[3]} << 8 | b[4]) & 0xFFFFFF;
        s.t.aeth.syndrome = b[5];
        s.src_port = static_cast<uint16_t>(1000 + (b[6] & 3));
        s.ecn = b[6] >> 6;
        s.payload_len = b[7] * 4u;
        s.t.bth.pad = proto::pad_for(s.payload_len);
        s.t.reth.dma_len = uint32_t{b[8]} * 64;
        s.t.reth.va = b[9];
        if (s.t.bth.opcode == proto::op::kUdSendOnly && s.t.bth.dest_qp == 1) {
            // A CM REQ or REP whose IDs and QPN come from the input.
            std::memset(mad, 0, sizeof(mad));
            mad[1] = 0x07;
            mad[17] = (b[9] & 1) ? 0x13 : 0x10;
            mad[27] = b[10] & 3;
            mad[31] = b[10] >> 2 & 3;
            mad[38] = mad[58] = b[11] & 7;
            s.payload = mad;
            s.payload_len = sizeof(mad);
            s.t.bth.pad = 0;
        }
        std::vector<uint8_t>& frame = frames[pending];
        const std::size_t len = proto::build_frame(s, frame);
        if (len == 0) continue;
        if (proto::parse_frame({frame.data(), len}, parsed[pending]) != proto::Verdict::roce)
            __builtin_trap();
        ts += b[11] * 37u;
        stamps[pending++] = ts;
        const bool housekeeping = (b[10] & 0x0F) == 0 || b[10] == 0xFF;
        if (pending == kBurst || housekeeping || (b[9] & 7) == 0) flush();
        if ((b[10] & 0x0F) == 0) engine->tick(ts);
        if (b[10] == 0xFF) engine->report(ts);
    }
    flush();
    engine->finish(ts + 1);
    if (engine->counters().endpoints_live.load() > cfg.max_endpoints) __builtin_trap();
    return 0;
}
