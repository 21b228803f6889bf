// Unit tests of insert-trace's user space (no BPF, no root): event decoding (records parsed
// back with nlohmann), GID -> IP, per-process state, ELF symbol resolution, /proc maps,
// command-line validation.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hosttrace/elf_symbols.hpp"
#include "hosttrace/event_decoder.hpp"
#include "hosttrace/json_text.hpp"
#include "hosttrace/proc_maps.hpp"
#include "hosttrace/process_table.hpp"
#include "hosttrace/trace_options.hpp"

namespace insert::hosttrace {
namespace {

constexpr uint32_t kPid = 4242;
constexpr uint64_t kCtx = 0x1000;
constexpr uint64_t kQp = 0x2000;

insert_trace_event make_event(uint32_t kind) {
    insert_trace_event e{};
    e.kind = kind;
    e.pid = kPid;
    e.tid = kPid;
    e.ts_ns = 1000;
    std::strcpy(e.comm, "app");
    e.ctx = kCtx;
    return e;
}

constexpr const char* kHost = "test-host";

// The event's record: one line, parsed (keys in the order written).
nlohmann::ordered_json decode(const insert_trace_event& e, ProcessTable& table,
                              int64_t wall_offset_ns = 0) {
    std::string line;
    decode_event(e, table, wall_offset_ns, kHost, line);
    EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
    return nlohmann::ordered_json::parse(line);
}

std::vector<std::string> keys(const nlohmann::ordered_json& j) {
    std::vector<std::string> out;
    for (const auto& [k, v] : j.items()) out.push_back(k);
    return out;
}

Gid v4_gid(const char* ip) {
    Gid g{};
    g[10] = g[11] = 0xff;
    inet_pton(AF_INET, ip, g.data() + 12);
    return g;
}

insert_trace_event gid_event(int index, const Gid& g) {
    insert_trace_event e = make_event(INSERT_EV_QUERY_GID);
    e.u.query_gid.port = 1;
    e.u.query_gid.index = index;
    std::memcpy(e.u.query_gid.gid, g.data(), 16);
    return e;
}

TEST(GidToIp, Ipv4MappedGidIsDottedQuad) {
    EXPECT_EQ(gid_to_ip(v4_gid("10.0.0.7")), "10.0.0.7");
}

TEST(GidToIp, OtherGidIsIpv6AndZeroIsAbsent) {
    Gid g{};
    inet_pton(AF_INET6, "fd00::1", g.data());
    EXPECT_EQ(gid_to_ip(g), "fd00::1");
    EXPECT_EQ(gid_to_ip(Gid{}), std::nullopt);
}

TEST(DecodeModifyQp, RtrFieldsOnlyWhereTheMaskSetsThem) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_MODIFY_QP);
    e.obj = kQp;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.dest_qp_num = 0x1234;
    attr.rq_psn = 77;
    attr.sq_psn = 99;  // not in the mask: must not appear
    attr.path_mtu = IBV_MTU_4096;
    attr.ah_attr.is_global = 1;
    const Gid peer = v4_gid("10.0.0.2");
    std::memcpy(attr.ah_attr.grh.dgid.raw, peer.data(), 16);
    std::memcpy(e.u.modify_qp.attr, &attr, sizeof(attr));
    e.u.modify_qp.qp_num = 5;
    e.u.modify_qp.attr_mask =
        IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_PATH_MTU | IBV_QP_AV;
    const auto j = decode(e, table);
    EXPECT_EQ(j["verb"], "modify_qp");
    EXPECT_EQ(j["state"], "RTR");
    EXPECT_EQ(j["from_state"], "RESET");
    EXPECT_EQ(j["dest_qpn"], 0x1234);
    EXPECT_EQ(j["rq_psn"], 77);
    EXPECT_EQ(j["path_mtu"], 4096);
    EXPECT_EQ(j["peer_ip"], "10.0.0.2");
    EXPECT_FALSE(j.contains("sq_psn"));
    EXPECT_FALSE(j.contains("qkey"));
}

TEST(DecodeModifyQp, FromStateFollowsSuccessfulTransitionsOnly) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_MODIFY_QP);
    e.obj = kQp;
    ibv_qp_attr attr{};
    e.u.modify_qp.attr_mask = IBV_QP_STATE;
    attr.qp_state = IBV_QPS_INIT;
    std::memcpy(e.u.modify_qp.attr, &attr, sizeof(attr));
    decode(e, table);
    attr.qp_state = IBV_QPS_RTS;  // refused by the provider
    std::memcpy(e.u.modify_qp.attr, &attr, sizeof(attr));
    e.ret = EINVAL;
    EXPECT_EQ(decode(e, table)["from_state"], "INIT");
    attr.qp_state = IBV_QPS_RTR;
    std::memcpy(e.u.modify_qp.attr, &attr, sizeof(attr));
    e.ret = 0;
    EXPECT_EQ(decode(e, table)["from_state"], "INIT");
    attr.qp_state = IBV_QPS_RTS;
    std::memcpy(e.u.modify_qp.attr, &attr, sizeof(attr));
    EXPECT_EQ(decode(e, table)["from_state"], "RTR");
}

TEST(DecodePostSend, RkeyOnlyForRdmaAndImmInHostOrder) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_POST_SEND);
    e.obj = kQp;
    e.u.post_send.opcode = IBV_WR_SEND_WITH_IMM;
    e.u.post_send.imm_data = htonl(0xabcd);
    e.u.post_send.rkey = 0x55;  // stale union bytes: not an RDMA op
    e.u.post_send.send_flags = IBV_SEND_SIGNALED;
    auto j = decode(e, table);
    EXPECT_EQ(j["opcode"], "SEND_WITH_IMM");
    EXPECT_EQ(j["imm"], 0xabcd);
    EXPECT_TRUE(j["rkey"].is_null());
    EXPECT_TRUE(j["signaled"]);
    e.u.post_send.opcode = IBV_WR_RDMA_WRITE;
    e.u.post_send.remote_addr = 0x7000;
    j = decode(e, table);
    EXPECT_EQ(j["rkey"], 0x55);
    EXPECT_EQ(j["remote_addr"], 0x7000);
    EXPECT_TRUE(j["imm"].is_null());
}

TEST(DecodeEvent, WallClockIsMonotonicPlusOffset) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_ALLOC_PD);
    const auto j = decode(e, table, 5000);
    EXPECT_EQ(j["t_ns"], 1000);
    EXPECT_EQ(j["wall_ns"], 6000);
    EXPECT_EQ(j["comm"], "app");
}

TEST(DecodeEvent, FieldsInTheirOrderWithHostLast) {
    ProcessTable table;
    table.apply(gid_event(0, v4_gid("10.0.0.1")));
    insert_trace_event e = make_event(INSERT_EV_POST_SEND);
    e.obj = 0x7f00ab;
    e.u.post_send.opcode = IBV_WR_RDMA_WRITE;
    e.u.post_send.qp_num = 17;
    const auto j = decode(e, table);
    EXPECT_EQ(keys(j),
              (std::vector<std::string>{
                  "type",        "verb",   "t_ns",       "wall_ns",     "pid",       "tid",
                  "comm",        "cgroup", "ip",         "ctx",         "qp",        "qpn",
                  "wr_id",       "opcode", "send_flags", "signaled",    "num_sge",   "len",
                  "remote_addr", "rkey",   "imm",        "chain_index", "truncated", "host"}));
    EXPECT_EQ(j["type"], "verb");
    EXPECT_EQ(j["ip"], "10.0.0.1");
    EXPECT_EQ(j["ctx"], "0x1000");
    EXPECT_EQ(j["qp"], "0x7f00ab");
    EXPECT_EQ(j["host"], kHost);
    EXPECT_FALSE(j["signaled"]);
}

TEST(DecodeEvent, FailedRegMrHasNullKeysInTheirPlace) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_REG_MR);
    e.u.mr.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
    e.u.mr.lkey = 5;
    e.ret = -1;
    const auto j = decode(e, table);
    EXPECT_EQ(keys(j), (std::vector<std::string>{
                           "type",   "verb", "t_ns", "wall_ns", "pid",          "tid",    "comm",
                           "cgroup", "ip",   "ctx",  "mr",      "addr",         "length", "lkey",
                           "rkey",   "pd",   "iova", "access",  "access_flags", "ret",    "host"}));
    EXPECT_TRUE(j["lkey"].is_null());
    EXPECT_TRUE(j["rkey"].is_null());
    EXPECT_TRUE(j["ip"].is_null());
    EXPECT_EQ(j["mr"], "0x0");
    EXPECT_EQ(j["access_flags"], (nlohmann::json{"LOCAL_WRITE", "REMOTE_READ"}));
    EXPECT_EQ(j["ret"], -1);
}

TEST(DecodeEvent, RecordsAppendToTheString) {
    ProcessTable table;
    std::string out = "earlier\n";
    decode_event(make_event(INSERT_EV_ALLOC_PD), table, 0, kHost, out);
    decode_event(make_event(INSERT_EV_CREATE_CQ), table, 0, kHost, out);
    ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
    const std::size_t second = out.find('\n', 8) + 1;
    EXPECT_EQ(nlohmann::json::parse(out.substr(8, second - 8))["verb"], "alloc_pd");
    EXPECT_EQ(nlohmann::json::parse(out.substr(second))["verb"], "create_cq");
}

// A process names itself with any bytes (prctl, the file it runs): quotes, backslashes and
// control characters are escaped, and bytes that are not UTF-8 become U+FFFD, so the line
// always parses; valid UTF-8 comes back as it was.
TEST(DecodeEvent, CommWithAnyBytesGivesAParseableLine) {
    const struct {
        std::string comm;
        std::string parsed;
    } cases[] = {
        {"a\"b\\c\t\n\r\x01\x1f/", "a\"b\\c\t\n\r\x01\x1f/"},
        {"caf\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac\xf0\x9f\x98\x80"},
        {"x\xffy\xc3(", "x\xef\xbf\xbdy\xef\xbf\xbd("},
        // An overlong form, a surrogate: each of the 5 bytes.
        {"\xc0\xaf\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
        {"fifteen_bytes_\xc3", "fifteen_bytes_\xef\xbf\xbd"},  // cut mid-character
        {"all_16_bytes_set", "all_16_bytes_set"},              // no NUL in the field
    };
    for (const auto& c : cases) {
        ProcessTable table;
        insert_trace_event e = make_event(INSERT_EV_ALLOC_PD);
        std::memset(e.comm, 0, sizeof(e.comm));
        std::memcpy(e.comm, c.comm.data(), std::min(c.comm.size(), sizeof(e.comm)));
        std::string line;
        decode_event(e, table, 0, kHost, line);
        EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
        nlohmann::json j;
        ASSERT_NO_THROW(j = nlohmann::json::parse(line)) << line;
        EXPECT_EQ(j["comm"], c.parsed) << line;
        EXPECT_EQ(j["host"], kHost);
        EXPECT_EQ(j["ctx"], "0x1000");  // the fields after comm are intact
    }
}

TEST(DecodeEvent, ControlCharactersAreWrittenAsUnicodeEscapes) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_ALLOC_PD);
    std::strcpy(e.comm, "a\tb\n");
    std::string line;
    decode_event(e, table, 0, kHost, line);
    EXPECT_NE(line.find(R"("comm":"a\u0009b\u000a")"), std::string::npos) << line;
}

TEST(JsonText, LongTextsAndPointers) {
    // Longer than the stack copy: paths, error messages.
    const std::string path = std::string(300, 'p') + "\xff/lib";
    std::string out;
    {
        JsonLine j(out);
        text(j, "lib", path);
        j.ip("ctx", HexPointer{0});
        j.ip("qp", HexPointer{0xffffffffffffffffull});
        j.ip("cq", HexPointer{0x55d0c0ffee10ull});
        j.end();
    }
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["lib"], std::string(300, 'p') + "\xef\xbf\xbd/lib");
    EXPECT_EQ(j["ctx"], "0x0");
    EXPECT_EQ(j["qp"], "0xffffffffffffffff");
    EXPECT_EQ(j["cq"], "0x55d0c0ffee10");
}

// kQp's modify_qp to RTR with an address vector whose source GID is sgid_index.
insert_trace_event rtr_with_sgid(uint8_t sgid_index) {
    insert_trace_event m = make_event(INSERT_EV_MODIFY_QP);
    m.obj = kQp;
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.sgid_index = sgid_index;
    std::memcpy(m.u.modify_qp.attr, &attr, sizeof(attr));
    m.u.modify_qp.attr_mask = IBV_QP_STATE | IBV_QP_AV;
    return m;
}

TEST(ProcessTable, HostIpIsTheGidOfTheQpsAddressVector) {
    ProcessTable table;
    table.apply(gid_event(0, v4_gid("10.0.0.1")));
    table.apply(gid_event(3, v4_gid("10.0.0.3")));
    EXPECT_EQ(table.host_ip(kPid, kCtx, 0), "10.0.0.1");
    table.apply(rtr_with_sgid(3));
    EXPECT_EQ(table.host_ip(kPid, kCtx, kQp), "10.0.0.3");
    EXPECT_EQ(table.host_ip(kPid + 1, kCtx, kQp), std::nullopt);
}

TEST(ProcessTable, DestroyedQpKeepsItsIpForLateDataPathRecords) {
    // softverbs' trace records can follow the QP's destroy_qp: they keep the QP's GID.
    ProcessTable table;
    table.apply(gid_event(0, v4_gid("10.0.0.1")));
    table.apply(gid_event(3, v4_gid("10.0.0.3")));
    insert_trace_event c = make_event(INSERT_EV_CREATE_QP);
    c.obj = kQp;
    c.u.create_qp.qp_num = 0x123;
    table.apply(c);
    table.apply(rtr_with_sgid(3));
    insert_trace_event d = make_event(INSERT_EV_DESTROY_QP);
    d.obj = kQp;
    table.apply(d);
    EXPECT_EQ(table.host_ip(kPid, kCtx, kQp), "10.0.0.3");
    // Not open any more; and a new QP at the same address starts afresh.
    insert_trace_event e = make_event(INSERT_EV_CREATE_QP);
    e.pid = 0x7ffffff0;  // no such process
    e.obj = 0x9000;
    table.apply(e);
    const auto dead = table.exited();
    EXPECT_NE(std::find(dead.begin(), dead.end(), 0x7ffffff0), dead.end());
    const auto gone = table.reap({0x7ffffff0});
    ASSERT_EQ(gone.size(), 1u);
    EXPECT_EQ(gone[0].pid, 0x7ffffff0);
    EXPECT_EQ(gone[0].open_qps, 1u);
    table.apply(c);
    EXPECT_EQ(table.host_ip(kPid, kCtx, kQp), "10.0.0.1");
}

TEST(ProcessTable, PrefersIpv4MappedGidsOverLinkLocal) {
    ProcessTable table;
    Gid link_local{};
    inet_pton(AF_INET6, "fe80::1", link_local.data());
    table.apply(gid_event(0, link_local));
    table.apply(gid_event(1, v4_gid("10.9.9.9")));
    EXPECT_EQ(table.host_ip(kPid, kCtx, 0), "10.9.9.9");
}

TEST(ProcessTable, ContextOpsAreClaimedOncePerProcessAndContext) {
    ProcessTable table;
    EXPECT_TRUE(table.claim_context_for_ops(kPid, kCtx));
    EXPECT_FALSE(table.claim_context_for_ops(kPid, kCtx));
    EXPECT_TRUE(table.claim_context_for_ops(kPid + 1, kCtx));
    EXPECT_FALSE(table.claim_context_for_ops(kPid, 0));
}

TEST(ProcessTable, ExitedProcessesAreReapedWithWhatTheyLeftOpen) {
    ProcessTable table;
    insert_trace_event e = make_event(INSERT_EV_CREATE_QP);
    e.pid = 0x7ffffff0;  // no such process
    e.obj = kQp;
    table.apply(e);
    e.kind = INSERT_EV_REG_MR;
    e.obj = 0x3000;
    table.apply(e);
    insert_trace_event self = make_event(INSERT_EV_ALLOC_PD);
    self.pid = static_cast<uint32_t>(getpid());
    table.apply(self);
    const auto gone = table.reap_exited();
    ASSERT_EQ(gone.size(), 1u);
    EXPECT_EQ(gone[0].open_qps, 1u);
    EXPECT_EQ(gone[0].open_mrs, 1u);
    EXPECT_EQ(table.size(), 1u);  // this process stays
}

TEST(ElfSymbols, ResolvesDefaultVersionsAndRejectsNonElf) {
    std::string error;
    auto libc = ElfSymbols::load("/proc/self/exe", error);
    ASSERT_TRUE(libc) << error;
    EXPECT_FALSE(libc->function_offset("no_such_function_anywhere"));
    EXPECT_FALSE(ElfSymbols::load("/etc/hostname", error));
    EXPECT_NE(error.find("not an ELF"), std::string::npos);
    EXPECT_FALSE(ElfSymbols::load("/nonexistent", error));
}

TEST(ElfSymbols, SystemLibibverbsDefinesEveryProbedVerb) {
    const char* lib = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";
    // scripts/setup.sh installs it (libibverbs1 via libibverbs-dev): its absence is a failure.
    ASSERT_EQ(access(lib, R_OK), 0) << lib << " missing: run scripts/setup.sh";
    std::string error;
    auto elf = ElfSymbols::load(lib, error);
    ASSERT_TRUE(elf) << error;
    for (const char* v :
         {"ibv_open_device", "ibv_create_qp", "ibv_modify_qp", "ibv_reg_mr", "ibv_dereg_mr"})
        EXPECT_TRUE(elf->function_offset(v)) << v;
}

TEST(ProcMaps, LocatesOwnCodeInItsExecutable) {
    std::string error;
    auto maps = read_maps(getpid(), error);
    ASSERT_TRUE(maps) << error;
    const auto loc = locate(*maps, reinterpret_cast<uint64_t>(&make_event));
    ASSERT_TRUE(loc);
    char exe[4096] = {};
    ASSERT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
    EXPECT_EQ(loc->path, exe);
    EXPECT_FALSE(read_maps(0x7ffffff0, error));
    EXPECT_NE(error.find("no such process"), std::string::npos);
}

int parse(std::vector<std::string> args, TraceOptions& o, std::string& error) {
    args.insert(args.begin(), "insert-trace");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_trace_options(static_cast<int>(argv.size()), argv.data(), o, error);
}

TEST(TraceOptions, DatapathModes) {
    TraceOptions o;
    std::string error;
    EXPECT_EQ(parse({"--datapath", "sample:10"}, o, error), -1);
    EXPECT_EQ(o.datapath_sample, 10u);
    EXPECT_EQ(parse({"--datapath", "off"}, o, error), -1);
    EXPECT_EQ(o.datapath_sample, 0u);
    EXPECT_EQ(parse({"--datapath", "sample:0"}, o, error), 2);
    EXPECT_EQ(parse({"--datapath", "sample:x"}, o, error), 2);
}

TEST(TraceOptions, Sites) {
    TraceOptions o;
    std::string error;
    EXPECT_TRUE(o.use_sites);
    EXPECT_EQ(parse({"--sites", "off"}, o, error), -1);
    EXPECT_FALSE(o.use_sites);
    EXPECT_EQ(parse({"--sites", "auto"}, o, error), -1);
    EXPECT_TRUE(o.use_sites);
    EXPECT_EQ(parse({"--sites", "on"}, o, error), 2);
}

TEST(TraceOptions, RejectsBadValues) {
    TraceOptions o;
    std::string error;
    EXPECT_EQ(parse({"--ringbuf-kb", "3"}, o, error), 2);
    EXPECT_EQ(parse({"--comm", "a_name_longer_than_15"}, o, error), 2);
    EXPECT_EQ(parse({"--pid", "5", "--lib", "/x"}, o, error), 2);
    EXPECT_EQ(parse({"--cgroup", "/nonexistent"}, o, error), 2);
    TraceOptions fresh;  // parse() fills in: earlier calls left --pid and --lib set
    EXPECT_EQ(parse({"--ringbuf-kb", "64"}, fresh, error), -1);
    EXPECT_EQ(fresh.ringbuf_bytes, 64u * 1024);
}

}  // namespace
}  // namespace insert::hosttrace
