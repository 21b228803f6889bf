// Drives an Engine with frames built by the wire-format builder, as the pipeline would
// (build -> parse -> process), and collects its records. No EAL needed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/engine.hpp"

namespace insert::test {

class VectorSink : public state::RecordSink {
  public:
    bool push(const state::Record& r) override {
        records.push_back(r);
        return true;
    }
    std::vector<state::Record> records;
};

struct Host {
    proto::IpAddress ip;
};

// One direction's packet, with the fields tests vary.
struct Pkt {
    std::string src;
    std::string dst;
    uint8_t opcode = 0;
    uint32_t dest_qp = 0;
    uint32_t psn = 0;
    uint32_t payload = 0;
    uint16_t sport = 49152;
    uint8_t syndrome = 0;  // AETH
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_len = 0;
    uint32_t imm = 0;
    uint8_t ecn = 2;
    // Where it came from (a message's origin): Ethernet source, TTL / hop limit, port.
    proto::MacAddress src_mac = {0x02, 0, 0, 0, 0, 0x01};
    uint8_t ttl = 64;
    uint16_t port = proto::kNoPort;
};

class EngineHarness {
  public:
    explicit EngineHarness(state::EngineConfig config = small_config());
    static state::EngineConfig small_config() {
        state::EngineConfig c;
        c.max_endpoints = 1024;
        return c;
    }

    // Builds, parses and processes one packet at time `ts`.
    void send(const Pkt& p, uint64_t ts);
    void finish(uint64_t ts) { engine->finish(ts); }

    std::vector<state::MsgRecord> msgs() const;
    std::vector<state::EventRecord> events(state::EventKind kind) const;
    // The final qp record of (ip, qpn); fails the test if absent.
    state::QpRecord qp(const std::string& ip, uint32_t qpn) const;

    VectorSink sink;
    std::unique_ptr<state::Engine> engine;
};

}  // namespace insert::test
