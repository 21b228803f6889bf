// Which partitions a record goes to (dataplane/common/record_route.hpp; SPEC 10
// "Scale-out", docs/scale-out.md "The partition rule"), on records as insert-dp and
// insert-trace write them, and the top-level reader it stands on.
#include "dataplane/common/record_route.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace insert {
namespace {

const HostPartitions kParts(8, nullptr);

// The partitions of `line`; {-1} for every partition.
std::set<int> route(std::string_view line) {
    const RecordRoute r = route_record(line, kParts);
    if (r.every) return {-1};
    std::set<int> s;
    for (uint8_t i = 0; i < r.count; ++i) s.insert(static_cast<int>(r.partition[i]));
    EXPECT_EQ(s.size(), r.count) << "partitions listed twice: " << line;
    return s;
}

int p(const char* ip) {
    return static_cast<int>(kParts.of_ip(ip));
}

TEST(RecordRoute, msg_goes_to_requester_and_responder) {
    EXPECT_EQ(route(R"({"type":"msg","src_ip":"10.0.0.2","dst_ip":"10.0.0.7","dst_qpn":17,)"
                    R"("src_qpn":null,"op":"WRITE"})"),
              (std::set<int>{p("10.0.0.2"), p("10.0.0.7")}));
    // Two addresses of one partition: once.
    EXPECT_EQ(route(R"({"type":"msg","src_ip":"10.0.0.1","dst_ip":"10.0.0.1"})"),
              (std::set<int>{p("10.0.0.1")}));
}

TEST(RecordRoute, qp_goes_to_endpoint_and_peer_when_paired) {
    EXPECT_EQ(route(R"({"type":"qp","ip":"10.0.0.3","qpn":5,"peer_ip":"10.0.0.8","peer_qpn":9})"),
              (std::set<int>{p("10.0.0.3"), p("10.0.0.8")}));
    EXPECT_EQ(route(R"({"type":"qp","ip":"10.0.0.3","qpn":5,"peer_ip":null,"peer_qpn":null})"),
              (std::set<int>{p("10.0.0.3")}));
}

TEST(RecordRoute, event_goes_to_its_endpoint_and_a_pairing_to_the_peer_too) {
    EXPECT_EQ(route(R"({"type":"event","kind":"gap","ip":"10.0.0.4","qpn":1,"t_ns":5,"psn":3,)"
                    R"("missing":2,"count":1,"sources":1,"sources_exact":true})"),
              (std::set<int>{p("10.0.0.4")}));
    EXPECT_EQ(route(R"({"type":"event","kind":"pair","ip":"10.0.0.4","qpn":1,"t_ns":5,"psn":3,)"
                    R"("peer_ip":"10.0.0.5","peer_qpn":2,"pair_by":"psn"})"),
              (std::set<int>{p("10.0.0.4"), p("10.0.0.5")}));
    EXPECT_EQ(route(R"({"type":"event","kind":"pair","ip":"fd00::1","qpn":1,"t_ns":5,"psn":3,)"
                    R"("peer_ip":"fd00::2","peer_qpn":2,"pair_by":"cm"})"),
              (std::set<int>{p("fd00::1"), p("fd00::2")}));
}

TEST(RecordRoute, data_path_verbs_go_to_their_host_and_the_control_plane_everywhere) {
    for (const char* verb : {"post_send", "post_recv", "poll_cq"})
        EXPECT_EQ(route(std::string(R"({"type":"verb","verb":")") + verb +
                        R"(","t_ns":1,"pid":7,"comm":"app","cgroup":1,"ip":"10.0.0.6",)"
                        R"("ctx":"0x1","qpn":3,"host":"h6"})"),
                  (std::set<int>{p("10.0.0.6")}))
            << verb;
    // The tracer did not know the host's address yet: everywhere.
    EXPECT_EQ(route(R"({"type":"verb","verb":"post_recv","t_ns":1,"ip":null,"qpn":3})"),
              (std::set<int>{-1}));
    for (const char* verb : {"open_device", "query_gid", "alloc_pd", "create_cq", "create_qp",
                             "modify_qp", "destroy_qp", "reg_mr", "dereg_mr"})
        EXPECT_EQ(route(std::string(R"({"type":"verb","verb":")") + verb +
                        R"(","t_ns":1,"ip":"10.0.0.6","host":"h6"})"),
                  (std::set<int>{-1}))
            << verb;
    for (const char* line :
         {R"({"type":"trace_start","schema":"1.3","host":"h1"})",
          R"({"type":"attach","what":"ops","pid":1,"functions":{"post_send":{"ip":"10.0.0.1"}}})",
          R"({"type":"lost","t_ns":1,"host":"h1"})", R"({"type":"process_exit","pid":1})",
          R"({"type":"cgroup","id":4,"path":"/t"})", R"({"type":"trace_stats","final":true})",
          R"({"type":"summary","schema":"1.3","pkts":10})",
          R"({"type":"something_new","ip":"10.0.0.1"})", R"({"ip":"10.0.0.1"})", R"(not json)",
          R"({"type":"msg","src_ip":"10.0.0.1")", R"({"type":"msg"})"})
        EXPECT_EQ(route(line), (std::set<int>{-1})) << line;
}

TEST(RecordRoute, reads_the_top_level_only) {
    // A name holding what looks like an address field, escaped quotes and backslashes, and
    // nested objects with the same keys: none of it is taken for the record's own field.
    EXPECT_EQ(route(R"({"type":"verb","verb":"post_send","comm":"x\"ip\":\"10.0.0.9\\",)"
                    R"("extra":{"ip":"10.0.0.8","a":[{"ip":"10.0.0.7"},"]"]},"ip":"10.0.0.6"})"),
              (std::set<int>{p("10.0.0.6")}));
    // Blanks where JSON allows them, and the type after the addresses.
    EXPECT_EQ(route(R"( { "src_ip" : "10.0.0.2" , "type" : "msg" , "dst_ip":"10.0.0.3" } )"),
              (std::set<int>{p("10.0.0.2"), p("10.0.0.3")}));
}

TEST(RecordRoute, for_each_member_gives_values_and_stops_when_told) {
    std::vector<std::string> seen;
    EXPECT_TRUE(for_each_member(
        R"({"a":1,"b":"x\"y","c":{"d":[1,2]},"e":null,"f":true})", [&](const JsonMember& m) {
            seen.push_back(std::string(m.key) + "=" + std::string(m.value) + (m.string ? "'" : ""));
            return true;
        }));
    EXPECT_EQ(seen, (std::vector<std::string>{"a=1", R"(b=x\"y')", R"(c={"d":[1,2]})", "e=null",
                                              "f=true"}));
    int visits = 0;
    EXPECT_TRUE(
        for_each_member(R"({"a":1,"b":2,"c":3})", [&](const JsonMember&) { return ++visits < 2; }));
    EXPECT_EQ(visits, 2);
    EXPECT_TRUE(for_each_member("{}", [](const JsonMember&) { return true; }));
    for (const char* bad : {"", "[1]", R"({"a")", R"({"a":})", R"({"a":1,})", R"({"a":"x)"})
        EXPECT_FALSE(for_each_member(bad, [](const JsonMember&) { return true; })) << bad;
}

}  // namespace
}  // namespace insert
