#include "engine_harness.hpp"

#include <gtest/gtest.h>

namespace insert::test {

EngineHarness::EngineHarness(state::EngineConfig config) {
    std::string error;
    engine = state::Engine::create(config, sink, error);
    EXPECT_TRUE(engine) << error;
}

void EngineHarness::send(const Pkt& p, uint64_t ts) {
    proto::FrameSpec s;
    s.src_ip = *proto::IpAddress::parse(p.src);
    s.dst_ip = *proto::IpAddress::parse(p.dst);
    s.src_port = p.sport;
    s.ecn = p.ecn;
    s.t.bth.opcode = p.opcode;
    s.t.bth.dest_qp = p.dest_qp;
    s.t.bth.psn = p.psn;
    s.t.bth.pad = proto::pad_for(p.payload);
    s.t.aeth.syndrome = p.syndrome;
    s.t.reth = {p.va, p.rkey, p.dma_len};
    s.t.atomic.va = p.va;
    s.t.atomic.rkey = p.rkey;
    s.t.imm = p.imm;
    s.t.ieth_rkey = p.imm;
    s.payload_len = p.payload;
    s.src_mac = p.src_mac;
    s.ttl = p.ttl;
    std::vector<uint8_t> buf(proto::frame_length(s));
    ASSERT_EQ(proto::build_frame(s, buf), buf.size());
    proto::ParsedPacket parsed;
    ASSERT_EQ(proto::parse_frame(buf, parsed), proto::Verdict::roce);
    parsed.port = p.port;  // the worker's part
    engine->process(parsed, ts);
}

std::vector<state::MsgRecord> EngineHarness::msgs() const {
    std::vector<state::MsgRecord> out;
    for (const auto& r : sink.records)
        if (r.type == state::RecordType::msg) out.push_back(r.msg);
    return out;
}

std::vector<state::EventRecord> EngineHarness::events(state::EventKind kind) const {
    std::vector<state::EventRecord> out;
    for (const auto& r : sink.records)
        if (r.type == state::RecordType::event && r.event.kind == kind) out.push_back(r.event);
    return out;
}

state::QpRecord EngineHarness::qp(const std::string& ip, uint32_t qpn) const {
    const auto addr = *proto::IpAddress::parse(ip);
    for (const auto& r : sink.records)
        if (r.type == state::RecordType::qp && r.qp.final && r.qp.ip == addr && r.qp.qpn == qpn)
            return r.qp;
    ADD_FAILURE() << "no final qp record for " << ip << " qpn " << qpn;
    return {};
}

}  // namespace insert::test
