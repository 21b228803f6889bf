// libFuzzer target for SPEC invariant 1 under multi-source traffic: the same
// packets through one engine, and through 2-4 engines sharded by the replay's ip-pair hash,
// must give the same `msg` records, the same final `qp` records (merged per endpoint as the
// exporter merges them), the same events (each engine's event windows merged per endpoint,
// kind and second as the exporter merges them) and the same counters. Every 12 input bytes become
// one well-formed RoCEv2 packet among four hosts and four shared QPNs each - so most QPs
// receive from several hosts (a third host's SEND into a connection, stray ACKs, CNPs and
// UD from anyone, CM exchanges) - with PSNs that mostly continue each sender's sequence.
// Idle eviction and periodic reports happen at the same capture times for every engine, as
// the pipeline's workers do them (docs/pipeline.md "Time").
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/export/event_merger.hpp"
#include "dataplane/export/record_writer.hpp"
#include "dataplane/pipeline/shard.hpp"
#include "dataplane/proto/builder.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/state/engine.hpp"
#include "dataplane/state/qp_merge.hpp"

namespace {

using namespace insert;

class Collect : public state::RecordSink {
  public:
    bool push(const state::Record& r) override {
        records.push_back(r);
        return true;
    }
    std::vector<state::Record> records;
};

constexpr std::size_t kBytesPerPacket = 12;
constexpr unsigned kHosts = 4;
constexpr unsigned kQpns = 4;

// What the run of one engine set gives, comparable across worker counts.
struct Outcome {
    std::vector<std::string> msgs, evicted, events;
    std::map<std::string, state::QpRecord> finals;  // by "ip/qpn", merged
    uint64_t connections = 0, msgs_count = 0, table_full = 0;
};

std::string json(const state::Record& r) {
    std::string s;
    exporter::append_json(s, r);
    return s;
}

Outcome outcome(const std::vector<std::unique_ptr<Collect>>& sinks,
                const std::vector<std::unique_ptr<state::Engine>>& engines) {
    Outcome o;
    // Each engine's records in its own order (a worker's ring), engine after engine: the
    // merge holds a window until every engine's mark has passed it, or the end.
    exporter::EventMerger windows;
    windows.set_sources(static_cast<unsigned>(sinks.size()));
    const exporter::EventMerger::Emit event = [&o](const state::Record& r) {
        o.events.push_back(json(r));
    };
    for (unsigned k = 0; k < sinks.size(); ++k)
        for (const state::Record& r : sinks[k]->records) {
            if (r.type == state::RecordType::msg) o.msgs.push_back(json(r));
            if (r.type == state::RecordType::mark ||
                (r.type == state::RecordType::event && state::windowed(r.event.kind)))
                windows.take(r, k, event);
            else if (r.type == state::RecordType::event)
                o.events.push_back(json(r));
            if (r.type != state::RecordType::qp || !r.qp.final) continue;
            if (r.qp.evicted) {
                o.evicted.push_back(json(r));
                continue;
            }
            const std::string key = r.qp.ip.to_string() + "/" + std::to_string(r.qp.qpn);
            auto [it, added] = o.finals.try_emplace(key, r.qp);
            if (!added) state::merge_qp(it->second, r.qp);
        }
    windows.finish(event);
    for (const auto& e : engines) {
        o.connections += e->counters().connections.load();
        o.msgs_count += e->counters().msgs.load();
        o.table_full += e->counters().table_full.load();
    }
    std::sort(o.msgs.begin(), o.msgs.end());
    std::sort(o.evicted.begin(), o.evicted.end());
    std::sort(o.events.begin(), o.events.end());
    return o;
}

[[noreturn]] void differ(const char* what, const std::string& a, const std::string& b) {
    std::fprintf(stderr, "workers_fuzz: %s differ between 1 and N engines:\n  1: %s\n  N: %s\n",
                 what, a.c_str(), b.c_str());
    __builtin_trap();
}

void compare(const char* what, const std::vector<std::string>& a,
             const std::vector<std::string>& b) {
    for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const std::string x = i < a.size() ? a[i] : "(none)";
        const std::string y = i < b.size() ? b[i] : "(none)";
        if (x != y) differ(what, x, y);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const unsigned n = 2 + data[0] % 3;  // 2, 3 or 4 engines against one
    state::EngineConfig cfg;
    // Room for every part (20 endpoints, QP 1 included, x 3 sources) and for a message per
    // packet of the largest input (4096 bytes: 341 packets): no table or pool runs out,
    // whose sharing would differ with the engine count.
    cfg.max_endpoints = 1 << 12;
    cfg.grow_tables = true;
    cfg.idle_timeout_ns = (data[1] & 1) ? 4000 : 0;
    const uint64_t tick_ns = cfg.idle_timeout_ns / 8;
    data += 2;
    size -= 2;

    std::string error;
    std::vector<std::unique_ptr<Collect>> one_sink, many_sinks;
    std::vector<std::unique_ptr<state::Engine>> one, many;
    one_sink.push_back(std::make_unique<Collect>());
    one.push_back(state::Engine::create(cfg, *one_sink[0], error));
    for (unsigned i = 0; i < n; ++i) {
        many_sinks.push_back(std::make_unique<Collect>());
        many.push_back(state::Engine::create(cfg, *many_sinks[i], error));
    }
    for (const auto* set : {&one, &many})
        for (const auto& e : *set)
            if (!e) __builtin_trap();
    const auto every = [&](auto&& f) {
        for (auto& e : one) f(*e);
        for (auto& e : many) f(*e);
    };

    std::vector<uint8_t> frame(9000);
    uint8_t mad[256] = {};
    uint32_t next_psn[kHosts][kHosts][kQpns] = {};
    uint64_t ts = 1'000'000'000;
    uint64_t ticked = ts;  // last tick boundary reached
    for (std::size_t off = 0; off + kBytesPerPacket <= size; off += kBytesPerPacket) {
        const uint8_t* b = data + off;
        proto::FrameSpec s;
        const unsigned src = b[0] % kHosts;
        unsigned dst = (b[0] >> 2) % kHosts;
        if (dst == src) dst = (src + 1) % kHosts;
        s.src_ip = proto::IpAddress::v4(0x0A000001u + src);
        s.dst_ip = proto::IpAddress::v4(0x0A000001u + dst);
        s.t.bth.opcode = b[1];
        if (!proto::opcode_info(b[1]).valid) s.t.bth.opcode = b[1] & 0x1F;  // fold onto RC
        if (!proto::opcode_info(s.t.bth.opcode).valid) continue;
        const unsigned q = b[5] % kQpns;
        s.t.bth.dest_qp = 0x10 + q;
        // Mostly each sender's next PSN to that QP (so messages assemble and complete),
        // sometimes a small step back or ahead, sometimes anywhere.
        uint32_t& psn = next_psn[src][dst][q];
        if (b[2] & 0x80)
            psn = (uint32_t{b[2]} << 16 | uint32_t{b[3]} << 8 | b[4]) & 0xFFFFFF;
        else
            psn = (psn + (b[2] & 7) + 0xFFFFFF) & 0xFFFFFF;  // -1 .. +6
        s.t.bth.psn = psn;
        psn = (psn + 1) & 0xFFFFFF;
        s.t.aeth.syndrome = b[6];
        s.src_port = static_cast<uint16_t>(1000 + (b[7] & 1));
        s.ecn = b[7] >> 6;
        s.payload_len = (b[8] & 15) * 64u;
        s.t.bth.pad = proto::pad_for(s.payload_len);
        s.t.reth.dma_len = uint32_t{b[9]} * 64;
        s.t.reth.va = b[9];
        if (s.t.bth.opcode == proto::op::kUdSendOnly && (b[5] & 0x10)) {
            // A CM REQ or REP to QP 1, whose IDs and QPN come from the input.
            s.t.bth.dest_qp = 1;
            std::memset(mad, 0, sizeof(mad));
            mad[1] = 0x07;
            mad[17] = (b[9] & 1) ? 0x13 : 0x10;
            mad[27] = b[10] & 3;
            mad[31] = b[10] >> 2 & 3;
            mad[38] = mad[58] = static_cast<uint8_t>(0x10 + (b[11] & 3));
            s.payload = mad;
            s.payload_len = sizeof(mad);
            s.t.bth.pad = 0;
        }
        const std::size_t len = proto::build_frame(s, frame);
        if (len == 0) continue;
        proto::ParsedPacket parsed;
        if (proto::parse_frame({frame.data(), len}, parsed) != proto::Verdict::roce)
            __builtin_trap();
        ts += b[10] * 37u;
        // Housekeeping at the same capture times for every engine, before the packet that
        // crosses them (the pipeline's workers tick and report the latest boundary crossed).
        if (tick_ns != 0 && ts / tick_ns > ticked / tick_ns) {
            const uint64_t boundary = ts / tick_ns * tick_ns;
            every([&](state::Engine& e) { e.tick(boundary); });
            ticked = boundary;
        }
        if (b[11] == 0xFF) every([&](state::Engine& e) { e.report(ts); });
        one[0]->process(parsed, ts);
        const unsigned w = pipeline::shard_index(
            pipeline::shard_hash({frame.data(), len}, pipeline::ShardPolicy::ip_pair), n);
        many[w]->process(parsed, ts);
    }
    if (tick_ns != 0) every([&](state::Engine& e) { e.tick(ts / tick_ns * tick_ns); });
    every([&](state::Engine& e) { e.finish(ts + 1); });

    const Outcome a = outcome(one_sink, one), b = outcome(many_sinks, many);
    compare("msg records", a.msgs, b.msgs);
    compare("evicted qp records", a.evicted, b.evicted);
    compare("events", a.events, b.events);
    for (auto ia = a.finals.begin(), ib = b.finals.begin();
         ia != a.finals.end() || ib != b.finals.end();) {
        if (ia == a.finals.end() || ib == b.finals.end() || ia->first != ib->first)
            differ("final qp endpoints", ia == a.finals.end() ? "(end)" : ia->first,
                   ib == b.finals.end() ? "(end)" : ib->first);
        state::Record x, y;
        x.type = y.type = state::RecordType::qp;
        x.qp = ia->second;
        y.qp = ib->second;
        if (json(x) != json(y)) differ("final qp records", json(x), json(y));
        ++ia, ++ib;
    }
    if (a.connections != b.connections || a.msgs_count != b.msgs_count || a.table_full != 0 ||
        b.table_full != 0)
        differ("counters",
               std::to_string(a.connections) + " connections " + std::to_string(a.msgs_count) +
                   " msgs",
               std::to_string(b.connections) + " connections " + std::to_string(b.msgs_count) +
                   " msgs");
    return 0;
}
