// The flat path (flat_object.hpp) against simdjson: what it accepts and rejects, its
// number readers at their limits, and - on every record kind and on thousands of lines
// mutated one byte at a time (whitespace, escapes, nesting, non-ASCII, numbers that are
// not integers, truncation) - the same kind, reason and record from both paths.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "correlator/input/flat_object.hpp"
#include "correlator/input/ingest.hpp"
#include "correlator/input/line_parser.hpp"

namespace insert::correlate {
namespace {

std::string padded(const std::string& line) {
    return line + std::string(simdjson::SIMDJSON_PADDING, '\0');
}

bool scans(const std::string& line, FlatObject& flat) {
    const std::string buffer = padded(line);
    return flat.scan(buffer.data(), line.size(), field_table());
}

TEST(FlatObject, scans_scalar_objects_and_keeps_the_fields_read) {
    FlatObject flat;
    const std::string line =
        R"({"type":"msg","t_ns":5,"src_qpn":null,"bytes":1234,"final":true,"x":"y","op":"WRITE"})";
    const std::string buffer = padded(line);
    ASSERT_TRUE(flat.scan(buffer.data(), line.size(), field_table()));
    std::vector<Field> fields;
    for (const FlatValue& f : flat) fields.push_back(f.field);
    // t_ns (ignored) and x (unknown) are scanned but not kept.
    EXPECT_EQ(fields, (std::vector<Field>{Field::type, Field::src_qpn, Field::bytes, Field::final,
                                          Field::op}));
    EXPECT_EQ(flat.first(Field::type)->text(), "msg");
    EXPECT_EQ(flat.first(Field::src_qpn)->kind, 'n');
    EXPECT_EQ(flat.first(Field::bytes)->text(), "1234");
    EXPECT_EQ(flat.first(Field::final)->kind, 't');
    EXPECT_EQ(flat.first(Field::op)->kind, '"');
    EXPECT_EQ(flat.first(Field::dst_ip), nullptr);
}

// Values' ends are found 16 bytes at a time: every length around a step's edges, with the
// line ending right after the value, and a stop byte (an escape, a control byte) at every
// place of a long string.
TEST(FlatObject, values_of_every_length_around_the_scan_steps) {
    FlatObject flat;
    std::string buffer;  // the values point into it
    const auto scan = [&](const std::string& line) {
        buffer = padded(line);
        return flat.scan(buffer.data(), line.size(), field_table());
    };
    for (std::size_t n = 1; n <= 40; ++n) {
        // The bytes next to the stops' ranges: ' ' after the control bytes, DEL before
        // 0x80, '/' and ':' around the digits.
        std::string text, digits;
        for (std::size_t i = 0; i < n; ++i) {
            text += " ~\x7f/:a"[i % 6];
            digits += static_cast<char>('0' + (i + 1) % 10);
        }
        ASSERT_TRUE(scan(R"({"type":")" + text + R"("})")) << n;
        EXPECT_EQ(flat.first(Field::type)->text(), text);
        ASSERT_TRUE(scan(R"({"type":"msg","bytes":)" + digits + "}")) << n;
        EXPECT_EQ(flat.first(Field::bytes)->text(), digits);
        ASSERT_TRUE(scan(R"({"bytes":-)" + digits + R"(,"type":"msg"})")) << n;
        EXPECT_EQ(flat.first(Field::bytes)->text().substr(1), digits);
        EXPECT_EQ(flat.first(Field::bytes)->text()[0], '-');
        for (std::size_t at = 0; at < n; ++at) {
            for (const char stop : {'\\', '\x01', '\x80'}) {
                std::string bad = text;
                bad[at] = stop;
                EXPECT_FALSE(scan(R"({"type":")" + bad + R"("})")) << n << " " << at;
            }
        }
    }
}

TEST(FlatObject, leaves_everything_else_to_the_general_path) {
    FlatObject flat;
    EXPECT_TRUE(scans(R"({"type":"msg","bytes":0})", flat));
    for (const char* line : {
             R"({"type": "msg"})",             // whitespace
             R"({ "type":"msg"})",             //
             R"({"type":"m\"sg"})",            // escape
             R"({"ty\u0070e":"msg"})",         // escaped key
             "{\"type\":\"m\xc3\xa9g\"}",      // UTF-8
             "{\"type\":\"m\x01g\"}",          // control byte
             R"({"type":"msg","a":[1]})",      // nested
             R"({"type":"msg","a":{"b":1}})",  //
             R"({"type":"msg","bytes":1.5})",  // fraction
             R"({"type":"msg","bytes":1e3})",  // exponent
             R"({"type":"msg","bytes":01})",   // leading zero
             R"({"type":"msg","bytes":-0})",   // -0
             R"({"type":"msg","bytes":-})",    //
             R"({"type":"msg","bytes":tru})",  // broken literal
             R"({"type":"msg","bytes":1,})",   // trailing comma
             R"({"type":"msg","bytes"})",      // no value
             R"({"type":"msg"}})",             // text after the object
             R"({"type":"msg")",               // truncated
             R"({"type":"msg)",                //
             R"({})",                          // no field
             R"([{"type":"msg"}])",            // not an object
         })
        EXPECT_FALSE(scans(line, flat)) << line;
}

// The readers read words: the value is followed by padding, as in an input block.
uint64_t u64_of(const std::string& digits, bool& ok) {
    const std::string buffer = digits + std::string(16, ',');
    uint64_t v = 0;
    ok = flat_u64(FlatValue{buffer.data(), static_cast<uint32_t>(digits.size()), '0'}, v);
    return v;
}

int64_t i64_of(const std::string& digits, bool& ok) {
    const std::string buffer = digits + std::string(16, ',');
    int64_t v = 0;
    ok = flat_i64(FlatValue{buffer.data(), static_cast<uint32_t>(digits.size()), '0'}, v);
    return v;
}

TEST(FlatObject, number_readers_match_simdjson_at_their_limits) {
    bool ok = false;
    // Every length from 1 to 20 digits, word boundaries included.
    std::string digits;
    uint64_t expected = 0;
    for (int n = 1; n <= 19; ++n) {
        const int d = (n * 7) % 10;
        digits += static_cast<char>('0' + d);
        expected = expected * 10 + static_cast<uint64_t>(d);
        EXPECT_EQ(u64_of(digits, ok), expected) << digits;
        EXPECT_TRUE(ok) << digits;
    }
    EXPECT_EQ(u64_of("0", ok), 0u);
    EXPECT_TRUE(ok);
    EXPECT_EQ(u64_of("18446744073709551615", ok), UINT64_MAX);
    EXPECT_TRUE(ok);
    u64_of("18446744073709551616", ok);
    EXPECT_FALSE(ok);
    u64_of("100000000000000000000", ok);
    EXPECT_FALSE(ok);
    u64_of("-1", ok);
    EXPECT_FALSE(ok);
    EXPECT_EQ(i64_of("9223372036854775807", ok), INT64_MAX);
    EXPECT_TRUE(ok);
    EXPECT_EQ(i64_of("-9223372036854775808", ok), INT64_MIN);
    EXPECT_TRUE(ok);
    EXPECT_EQ(i64_of("-12345678901", ok), -12345678901);
    EXPECT_TRUE(ok);
    i64_of("9223372036854775808", ok);
    EXPECT_FALSE(ok);
    i64_of("-9223372036854775809", ok);
    EXPECT_FALSE(ok);
    uint64_t u = 0;
    EXPECT_FALSE(flat_u64(FlatValue{"12", 2, '"'}, u));  // a string is no number
}

// Everything a parse produced, as text: the two paths must agree on all of it.
std::string describe(LineKind kind, const std::string& reason, const WireMsg& m, const WireQp& q,
                     const HostEvent& e, const HostNames& names) {
    std::ostringstream o;
    o << static_cast<int>(kind) << " [" << reason << "]";
    if (kind == LineKind::wire_msg)
        o << " msg " << m.src_ip.to_string() << ' ' << m.dst_ip.to_string() << ' ' << m.src_qpn
          << ' ' << m.dst_qpn << ' ' << m.psn_first << ' ' << m.psn_last << ' '
          << static_cast<int>(m.op) << ' ' << static_cast<int>(m.status) << ' ' << m.imm << ' '
          << m.bytes << ' ' << m.va << ' ' << m.rkey << ' ' << m.dma_len << ' ' << m.t_first << ' '
          << m.t_last << ' ' << m.t_ack << ' ' << m.pkts << ' ' << m.retx_pkts << ' ' << m.naks
          << ' ' << m.rnr_naks;
    if (kind == LineKind::wire_qp)
        o << " qp " << q.ip.to_string() << ' ' << q.peer_ip.to_string() << ' ' << q.qpn << ' '
          << q.peer_qpn << ' ' << static_cast<int>(q.pair_by) << ' ' << q.has_peer_ip << ' '
          << q.final << ' ' << q.pkts << ' ' << q.cnps << ' ' << q.ecn_ce << ' ' << q.t_first << ' '
          << q.t_last;
    if (kind == LineKind::host_event) {
        o << " host " << names.view(e.host) << ' ' << e.pid << ' ' << e.tid << ' ' << e.qpn << ' '
          << e.ret << ' ' << static_cast<int>(e.kind) << ' ' << e.has_ip << ' ' << e.comm.view()
          << ' ' << e.ip.to_string() << ' ' << e.wall << ' ' << e.cgroup << ' ' << e.obj;
        const auto& u = e.u;
        switch (e.kind) {
            case HostKind::create_qp:
                o << " create " << u.create.pd << ' ' << u.create.rc_family << ' ' << u.create.uc;
                break;
            case HostKind::modify_qp:
                o << " modify " << static_cast<int>(u.modify.state) << ' ' << u.modify.has_dest_qpn
                  << u.modify.has_peer_ip << u.modify.has_sq_psn << u.modify.has_rq_psn
                  << u.modify.has_access << ' ' << u.modify.dest_qpn << ' ' << u.modify.sq_psn
                  << ' ' << u.modify.rq_psn << ' ' << u.modify.access << ' '
                  << u.modify.peer_ip.to_string();
                break;
            case HostKind::reg_mr:
            case HostKind::dereg_mr:
                o << " mr " << u.mr.pd << ' ' << u.mr.addr << ' ' << u.mr.length << ' ' << u.mr.iova
                  << ' ' << u.mr.access << ' ' << u.mr.rkey;
                break;
            case HostKind::post_send:
            case HostKind::post_recv:
                o << " post " << u.post.wr_id << ' ' << u.post.len << ' ' << u.post.remote_addr
                  << ' ' << u.post.rkey << ' ' << u.post.chain_index << ' '
                  << static_cast<int>(u.post.opcode) << ' ' << u.post.signaled;
                break;
            case HostKind::poll_cq:
                o << " poll " << u.poll.wr_id << ' ' << u.poll.byte_len << ' ' << u.poll.status_code
                  << ' ' << static_cast<int>(u.poll.opcode);
                break;
            case HostKind::lost:
                o << " lost " << u.lost.drops;
                break;
            default:
                break;
        }
    }
    return o.str();
}

// One parser per path, kept across lines as in a run (the address caches carry over).
struct Path {
    explicit Path(bool flat) : parser(names) { parser.use_flat_path(flat); }
    std::string parse(const std::string& line) {
        const std::string buffer = padded(line);
        WireMsg m;
        WireQp q;
        HostEvent e;
        std::string reason;
        const LineKind kind =
            parser.parse(buffer.data(), line.size(), buffer.size(), m, q, e, reason);
        return describe(kind, reason, m, q, e, names);
    }
    HostNames names;
    LineParser parser;
};

const std::vector<std::string> kLines = {
    R"({"type":"msg","src_ip":"10.9.0.2","dst_ip":"10.9.0.3","dst_qpn":5101,"src_qpn":101,)"
    R"("op":"WRITE","imm":null,"inv":null,"psn_first":7,"psn_last":9,"pkts":3,"bytes":1234,)"
    R"("va":18446744073709551615,"rkey":77,"dma_len":1234,"t_first_ns":1700000000123456789,)"
    R"("t_last_ns":1700000000123456799,"t_ack_ns":null,"latency_ns":10000,"retx_pkts":1,)"
    R"("naks":0,"rnr_naks":2,"status":"ok"})",
    R"({"type":"qp","ip":"10.9.0.2","qpn":101,"peer_ip":"fe80::1","peer_qpn":5101,)"
    R"("pair_by":"host","pkts":10,"cnps":1,"ecn_ce":2,"t_first_ns":5,"t_last_ns":null,)"
    R"("final":false})",
    R"({"type":"verb","verb":"post_send","t_ns":1,"wall_ns":-5,"pid":1000,"tid":1001,)"
    R"("comm":"ib_write_bw","cgroup":4242,"ip":"10.9.0.1","ctx":"0x5555","qp":"0x7001",)"
    R"("qpn":101,"wr_id":18446744073709551615,"opcode":"RDMA_WRITE_WITH_IMM","send_flags":2,)"
    R"("signaled":true,"num_sge":1,"len":1234,"remote_addr":140000000008192,"rkey":null,)"
    R"("imm":null,"chain_index":3,"truncated":false,"host":"node1"})",
    R"({"type":"verb","verb":"poll_cq","wall_ns":7,"pid":-1,"tid":1,"comm":"x","cgroup":null,)"
    R"("ip":null,"cq":"0x1","qpn":101,"wr_id":7,"status_code":12,"opcode":"RECV",)"
    R"("byte_len":64,"host":"node1"})",
    R"({"type":"verb","verb":"create_qp","wall_ns":1,"pid":2,"qp":"0xABCdef","qpn":9,)"
    R"("qp_type":"UC","pd":"0x10","ret":0})",
    R"({"type":"verb","verb":"modify_qp","wall_ns":1,"pid":2,"qp":"0x1","qpn":9,"state":"RTR",)"
    R"("dest_qpn":77,"rq_psn":5,"sq_psn":6,"peer_ip":"10.0.0.9","ret":-22})",
    R"({"type":"verb","verb":"reg_mr","wall_ns":1,"pid":2,"mr":"0x9000","pd":"0x10",)"
    R"("addr":140000000000000,"length":4096,"iova":null,"access":15,"lkey":1,"rkey":77})",
    R"({"type":"process_exit","wall_ns":9,"pid":2,"comm":"a","open_qps":0,"host":"h"})",
    R"({"type":"lost","wall_ns":9,"ringbuf_drops":12,"ringbuf_drops_total":12})",
    R"({"type":"verb","verb":"open_device","wall_ns":1,"pid":2})",
    R"({"type":"trace_stats","final":true,"events":5})",
    R"({"type":"frob","x":1})",
    R"({"verb":"post_send","type":"verb","qp":"0x1","qpn":1,"wr_id":1,"opcode":"SEND",)"
    R"("len":1,"wall_ns":1,"pid":1,"type":"msg"})",
};

TEST(FlatObject, both_paths_agree_on_every_record_kind) {
    Path flat(true), general(false);
    for (const std::string& line : kLines) {
        const std::string expected = general.parse(line);
        EXPECT_EQ(flat.parse(line), expected) << line;
        const std::string not_json = std::to_string(static_cast<int>(LineKind::not_json)) + " [";
        EXPECT_NE(expected.rfind(not_json, 0), 0u) << "not JSON: " << line;  // the lines are valid
    }
}

// Keys matched where they stand include the colon: whitespace before it (the general
// path's lines) must still name the field, not make it unknown.
TEST(FlatObject, whitespace_between_tokens_reads_like_the_compact_line) {
    Path flat(true), general(false);
    for (const std::string& line : kLines) {
        std::string spaced;
        for (std::size_t i = 0; i < line.size(); ++i) {
            if (line[i] == ':' && i > 0 && line[i - 1] == '"') {
                spaced += " : ";
                continue;
            }
            spaced += line[i];
            if (line[i] == ',' && i + 1 < line.size() && line[i + 1] == '"') spaced += ' ';
        }
        ASSERT_NE(spaced, line);
        FlatObject probe;
        EXPECT_FALSE(scans(spaced, probe)) << spaced;
        EXPECT_EQ(general.parse(spaced), flat.parse(line)) << spaced;
    }
}

TEST(FlatObject, both_paths_agree_on_mutated_lines) {
    static constexpr char kBytes[] = {' ', '"', '\\', '{', '}', '[', ']', ',', ':',    '-',   '0',
                                      '1', '9', '.',  'e', 'E', 'n', 't', 'x', '\x01', '\x80'};
    std::mt19937_64 rng(20261203);
    Path flat(true), general(false);
    int mutated = 0, flat_taken = 0;
    for (int round = 0; round < 1500; ++round) {
        for (const std::string& original : kLines) {
            std::string line = original;
            const std::size_t at = rng() % line.size();
            switch (rng() % 4) {
                case 0:
                    line.erase(at, 1);
                    break;
                case 1:
                    line.insert(at, 1, kBytes[rng() % sizeof kBytes]);
                    break;
                case 2:
                    line[at] = kBytes[rng() % sizeof kBytes];
                    break;
                default:
                    line.resize(at);  // truncated
                    break;
            }
            FlatObject probe;
            flat_taken += scans(line, probe);
            ASSERT_EQ(flat.parse(line), general.parse(line)) << line;
            ++mutated;
        }
    }
    // Most mutations leave the line flat (a changed digit or letter), many do not.
    EXPECT_GT(flat_taken, mutated / 4);
    EXPECT_LT(flat_taken, mutated);
}

TEST(FlatObject, scan_line_ends_at_the_newline_after_the_object) {
    const std::string line = R"({"type":"lost","wall_ns":9,"ringbuf_drops":12})";
    FlatObject flat;
    const auto end_of = [&](const std::string& text) -> long {
        const std::string buffer = padded(text);
        const char* end = flat.scan_line(buffer.data(), buffer.data() + text.size(), field_table());
        return end ? end - buffer.data() : -1;
    };
    const auto n = static_cast<long>(line.size());
    EXPECT_EQ(end_of(line + "\n" + line + "\n"), n);  // the first line only
    EXPECT_EQ(end_of(line), n);                       // the last, without its newline
    EXPECT_EQ(end_of(line + "\r\n"), -1);             // the general path trims the rest
    EXPECT_EQ(end_of(line + " \n"), -1);
    EXPECT_EQ(end_of(line + "}\n"), -1);
    EXPECT_EQ(end_of(R"({"type":"lo)"
                     "\n"
                     R"(st","wall_ns":9})"),
              -1);  // a cut string
    EXPECT_EQ(end_of(R"({"type":"lost","wall_ns":9)"
                     "\n"
                     "}"),
              -1);
    EXPECT_EQ(end_of(R"({"type":"lost","wall_ns":)"
                     "\n"
                     "9}"),
              -1);
    EXPECT_EQ(end_of(R"({"type":"lost","wall_)"
                     "\n"
                     R"(ns":9})"),
              -1);  // a cut key
}

// Everything parse_block made of a block, as text.
std::string describe_block(const std::string& block, bool last_unterminated, bool flat) {
    HostNames names;
    LineParser parser(names);
    parser.use_flat_path(flat);
    Ingested out;
    IngestCounts counts;
    std::vector<BadLine> bad;
    const std::string buffer = padded(block);
    const uint64_t lines =
        parse_block(parser, buffer.data(), block.size(), 0, 1, last_unterminated, out, counts, bad);
    std::ostringstream o;
    o << lines << " lines " << counts.lines << ' ' << counts.msg << ' ' << counts.qp << ' '
      << counts.host << ' ' << counts.ignored << ' ' << counts.not_json << ' ' << counts.truncated
      << ' ' << counts.bad_field << ' ' << counts.unknown_type << '\n';
    for (const BadLine& b : bad) o << "bad " << b.line << ' ' << b.reason << '\n';
    for (const WireMsg& m : out.msgs)
        o << describe(LineKind::wire_msg, "", m, {}, {}, names) << '\n';
    for (const WireQp& q : out.qps) o << describe(LineKind::wire_qp, "", {}, q, {}, names) << '\n';
    for (const HostEvent& e : out.events)
        o << describe(LineKind::host_event, "", {}, {}, e, names) << '\n';
    return o.str();
}

// parse_block lets the flat scan find each line's end (scan_line), and cuts the other lines
// at their newline first: on blocks of mutated lines - newlines and carriage returns put
// anywhere too - both ways must cut and read the same lines.
TEST(FlatObject, blocks_are_cut_into_the_same_lines_either_way) {
    static constexpr char kBytes[] = {'\n', '\n', '\r', ' ', '"', '}', '{', ',', ':', '1', 'x'};
    std::mt19937_64 rng(20261204);
    for (int round = 0; round < 300; ++round) {
        std::string block;
        for (int k = 0; k < 12; ++k) {
            std::string line = kLines[rng() % kLines.size()];
            if (rng() % 2) {
                const std::size_t at = rng() % line.size();
                if (rng() % 2)
                    line.insert(at, 1, kBytes[rng() % sizeof kBytes]);
                else
                    line[at] = kBytes[rng() % sizeof kBytes];
            }
            block += line + "\n";
        }
        const bool unterminated = rng() % 3 == 0;
        if (unterminated) block.resize(block.size() - 1 - rng() % 20);
        const std::string general = describe_block(block, unterminated, false);
        ASSERT_EQ(describe_block(block, unterminated, true), general) << block;
    }
}

}  // namespace
}  // namespace insert::correlate
