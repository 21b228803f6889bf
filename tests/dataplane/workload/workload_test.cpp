// The benchmarks' synthetic workload (dataplane/workload/workload.hpp) in both of its shapes:
// every endpoint appears, each connection's requests are in PSN order without gaps, the
// message sizes stay within the spec, and exactly `active` messages are on the wire at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "dataplane/proto/parser.hpp"
#include "dataplane/proto/psn.hpp"
#include "dataplane/workload/workload.hpp"

using namespace insert;

namespace {

struct Shape {
    uint64_t frames = 0;
    std::size_t endpoints = 0;       // distinct destination endpoints
    uint32_t most_open = 0;          // messages between their first request and their answer
    uint32_t longest_write = 0;      // request packets of a WRITE
    uint32_t longest_send = 0;       // request packets of a SEND
    uint64_t psn_breaks = 0;         // requests whose PSN is not the connection's next
    uint64_t answers_unmatched = 0;  // answers to a connection without an open message
    double mean_frame = 0;
};

// The workload's connections number their QPs 0x100 + 2i (requester), 0x101 + 2i.
uint32_t connection_of(uint32_t qpn) {
    return (qpn - 0x100) / 2;
}

Shape measure(const workload::WorkloadSpec& spec) {
    Shape s;
    std::set<std::pair<proto::IpAddress, uint32_t>> endpoints;
    std::map<uint32_t, uint32_t> next_psn;      // connection -> the next request PSN
    std::map<uint32_t, uint32_t> response_psn;  // connection -> its READ's next response
    std::map<uint32_t, uint32_t> open;          // connection -> request packets of its message
    std::map<uint32_t, proto::OpKind> open_kind;
    uint64_t bytes = 0;
    workload::generate_workload(spec, [&](uint64_t, std::span<const uint8_t> frame) {
        proto::ParsedPacket p;
        ASSERT_EQ(proto::parse_frame(frame, p), proto::Verdict::roce);
        ++s.frames;
        bytes += frame.size();
        endpoints.insert({p.dst_ip, p.t.bth.dest_qp});
        const proto::OpcodeInfo& info = p.info();
        const uint32_t c = connection_of(p.t.bth.dest_qp);
        if (info.request) {
            auto [it, first_seen] = next_psn.try_emplace(c, p.t.bth.psn);
            if (it->second != p.t.bth.psn) ++s.psn_breaks;
            it->second = proto::psn_add(p.t.bth.psn, 1);
            // A READ's responses take PSNs from the request's on, and so do the requests
            // after them.
            if (info.kind == proto::OpKind::read_request) response_psn[c] = p.t.bth.psn;
            ++open[c];
            open_kind[c] = info.kind;
            s.most_open = std::max(s.most_open, static_cast<uint32_t>(open.size()));
            return;
        }
        // The answer that ends a message: an ACK, an ATOMIC ACK, a READ's last response.
        const bool ends = info.kind != proto::OpKind::read_response ||
                          info.position == proto::Position::last ||
                          info.position == proto::Position::only;
        if (info.kind == proto::OpKind::read_response) {
            if (p.t.bth.psn != response_psn[c]) ++s.psn_breaks;
            response_psn[c] = next_psn[c] = proto::psn_add(p.t.bth.psn, 1);
        }
        if (!ends) return;
        const auto it = open.find(c);
        if (it == open.end()) {
            ++s.answers_unmatched;
            return;
        }
        if (open_kind[c] == proto::OpKind::write)
            s.longest_write = std::max(s.longest_write, it->second);
        if (open_kind[c] == proto::OpKind::send)
            s.longest_send = std::max(s.longest_send, it->second);
        open.erase(it);
    });
    s.endpoints = endpoints.size();
    s.mean_frame = s.frames ? static_cast<double>(bytes) / static_cast<double>(s.frames) : 0;
    return s;
}

}  // namespace

TEST(Workload, small_messages_are_sent_one_at_a_time) {
    workload::WorkloadSpec spec;
    spec.endpoints = 200;
    spec.hosts = 16;
    spec.messages = 2000;
    const Shape s = measure(spec);
    EXPECT_EQ(s.endpoints, 200u);
    EXPECT_EQ(s.most_open, 1u);
    EXPECT_EQ(s.longest_write, 4u);
    EXPECT_EQ(s.longest_send, 2u);
    EXPECT_EQ(s.psn_breaks, 0u);
    EXPECT_EQ(s.answers_unmatched, 0u);
}

TEST(Workload, line_rate_keeps_active_messages_interleaved) {
    workload::WorkloadSpec spec;
    spec.endpoints = 1000;
    spec.hosts = 64;
    spec.messages = 2000;
    spec.max_message_packets = 64;
    spec.active = 64;
    const Shape s = measure(spec);
    EXPECT_EQ(s.endpoints, 1000u);
    EXPECT_EQ(s.most_open, 64u);
    EXPECT_EQ(s.longest_write, 64u);
    EXPECT_EQ(s.longest_send, 32u);
    EXPECT_EQ(s.psn_breaks, 0u);
    EXPECT_EQ(s.answers_unmatched, 0u);
    // Mostly full 1 KB frames (1024 B of payload and 70 B of headers), few short answers.
    EXPECT_GT(s.mean_frame, 900.0);
}

TEST(Workload, active_is_capped_below_the_connection_count) {
    // Each active message needs a connection of its own: 10 connections, 5 at most.
    workload::WorkloadSpec spec;
    spec.endpoints = 20;
    spec.hosts = 4;
    spec.messages = 500;
    spec.active = 64;
    const Shape s = measure(spec);
    EXPECT_EQ(s.most_open, 5u);
    EXPECT_EQ(s.psn_breaks, 0u);
    EXPECT_EQ(s.answers_unmatched, 0u);
}
