// `insert-dp decode FILE`: one CSV row per well-formed RoCEv2 packet (SPEC.md section 8).
// The differential test compares every cell with Wireshark's InfiniBand dissector, so the
// columns print exactly what is on the wire, in decimal, and nothing that is not.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>

#include "dataplane/capture/capture_file.hpp"
#include "dataplane/proto/parser.hpp"
#include "dataplane/tools/command_line.hpp"
#include "dataplane/tools/commands.hpp"
#include "dataplane/tools/stop_signals.hpp"

namespace insert::tools {

namespace {

constexpr std::string_view kCsvHeader =
    "frame,src_ip,dst_ip,sport,opcode,dest_qp,psn,ack_req,se,pad,pkey,fecn,becn,reth_va,"
    "reth_rkey,reth_len,aeth_syndrome,aeth_msn,imm,ieth_rkey,deth_qkey,deth_src_qp,"
    "payload_len\n";

// Rows are collected in a buffer and written in large chunks: one fwrite per row would
// dominate the run time on multi-million-packet captures.
constexpr std::size_t kFlushBytes = 1 << 20;

constexpr const char* kUsage =
    "usage: insert-dp decode FILE [--summary]\n"
    "\n"
    "Prints one CSV row per well-formed RoCEv2 packet (UDP destination port 4791) of a\n"
    "pcap or pcapng capture (Ethernet link type; FILE - : standard input, read to its end\n"
    "first) on stdout, with the header\n"
    "  frame,src_ip,dst_ip,sport,opcode,dest_qp,psn,ack_req,se,pad,pkey,fecn,becn,\n"
    "  reth_va,reth_rkey,reth_len,aeth_syndrome,aeth_msn,imm,ieth_rkey,deth_qkey,\n"
    "  deth_src_qp,payload_len\n"
    "frame is the 1-based index of the frame in the file; numbers are decimal; a cell is\n"
    "empty when the packet does not carry that header (atomics leave reth_* empty).\n"
    "Non-RoCE and malformed packets get no row (see --summary).\n"
    "\n"
    "options:\n"
    "  --summary   after the rows, print frame counts (frames, roce, non_roce, malformed\n"
    "              by reason) on stderr; stdout stays pure CSV\n"
    "  -h, --help  this text\n"
    "  --version   the version of insert-dp\n"
    "\n"
    "exit status: 0 success (also for a capture cut short: the complete frames are printed,\n"
    "then one warning line naming the file on stderr); 2 missing or unreadable file, not a\n"
    "capture, non-Ethernet link type, bad option (one line on stderr, nothing on stdout), or a\n"
    "file that shrank while it was read; 1 writing stdout failed (a closed pipe stops the\n"
    "decoding at once); 128+N stopped by signal N (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,\n"
    "SIGUSR2: the rows so far are written whole).\n"
    "\n"
    "examples:\n"
    "  insert-dp decode pcaps/rc_mixed.pcap\n"
    "  insert-dp decode pcaps/rc_mixed.pcap --summary > packets.csv\n"
    "  insert-dp decode capture.pcapng | awk -F, '$5 == 17'   # ACKs only\n"
    "  zcat capture.pcap.gz | insert-dp decode -\n";

struct Counts {
    uint64_t frames = 0;
    uint64_t roce = 0;
    uint64_t non_roce = 0;
    std::array<uint64_t, proto::kMalformedReasons> malformed{};
};

// IpAddress keeps IPv4 as ::ffff:a.b.c.d, so an IPv6 packet carrying a v4-mapped address
// would print as IPv4; print by the packet's family, as Wireshark does.
void append_ip(fmt::memory_buffer& out, const proto::IpAddress& ip, bool ipv6) {
    char text[INET6_ADDRSTRLEN];
    std::size_t n = 0;
    if (ipv6 && ip.is_v4()) {
        if (inet_ntop(AF_INET6, ip.bytes.data(), text, sizeof(text))) n = std::strlen(text);
    } else {
        n = ip.format(text);
    }
    out.append(text, text + n);
}

void append_row(fmt::memory_buffer& out, uint64_t frame, const proto::ParsedPacket& p) {
    using proto::ExtHeader;
    const proto::TransportHeaders& t = p.t;
    const proto::Bth& b = t.bth;
    fmt::format_to(std::back_inserter(out), "{},", frame);
    append_ip(out, p.src_ip, p.ipv6);
    out.push_back(',');
    append_ip(out, p.dst_ip, p.ipv6);
    fmt::format_to(std::back_inserter(out), ",{},{},{},{},{:d},{:d},{},{},{:d},{:d},", p.src_port,
                   b.opcode, b.dest_qp, b.psn, b.ack_req, b.se, b.pad, b.pkey, b.fecn, b.becn);
    if (t.has(proto::kReth))
        fmt::format_to(std::back_inserter(out), "{},{},{},", t.reth.va, t.reth.rkey,
                       t.reth.dma_len);
    else
        out.append(std::string_view(",,,"));
    if (t.has(proto::kAeth))
        fmt::format_to(std::back_inserter(out), "{},{},", t.aeth.syndrome, t.aeth.msn);
    else
        out.append(std::string_view(",,"));
    if (t.has(proto::kImmDt)) fmt::format_to(std::back_inserter(out), "{}", t.imm);
    out.push_back(',');
    if (t.has(proto::kIeth)) fmt::format_to(std::back_inserter(out), "{}", t.ieth_rkey);
    out.push_back(',');
    if (t.has(proto::kDeth))
        fmt::format_to(std::back_inserter(out), "{},{},", t.deth.qkey, t.deth.src_qp);
    else
        out.append(std::string_view(",,"));
    fmt::format_to(std::back_inserter(out), "{}\n", p.payload_len);
}

bool flush(fmt::memory_buffer& out) {
    const bool ok = std::fwrite(out.data(), 1, out.size(), stdout) == out.size();
    out.clear();
    return ok;
}

void print_summary(const std::string& path, const Counts& c) {
    std::fprintf(stderr, "%s: %llu frames, %llu roce, %llu non_roce, %llu malformed", path.c_str(),
                 static_cast<unsigned long long>(c.frames), static_cast<unsigned long long>(c.roce),
                 static_cast<unsigned long long>(c.non_roce),
                 static_cast<unsigned long long>(c.frames - c.roce - c.non_roce));
    const char* sep = " (";
    for (std::size_t m = 1; m < proto::kMalformedReasons; ++m) {
        if (c.malformed[m] == 0) continue;
        const std::string_view name = proto::malformed_name(static_cast<proto::Malformed>(m));
        std::fprintf(stderr, "%s%.*s %llu", sep, static_cast<int>(name.size()), name.data(),
                     static_cast<unsigned long long>(c.malformed[m]));
        sep = ", ";
    }
    std::fprintf(stderr, "%s\n", sep[0] == ',' ? ")" : "");
}

}  // namespace

int run_decode(int argc, char** argv) {
    constexpr const char* kName = "insert-dp decode";
    std::string path;
    bool summary = false;
    CLI::App app("", kName);
    app.add_option("FILE", path, "pcap or pcapng capture");
    app.add_flag("--summary", summary, "frame counts on stderr");
    // The usage text above is the whole help: the CSV columns need more than CLI11's table.
    app.formatter_fn([](const CLI::App*, std::string, CLI::AppFormatMode) { return kUsage; });
    if (const int rc = parse_args(app, {argv + 1, argv + argc}, kName); rc != 0)
        return rc == 1 ? 0 : 2;
    if (path.empty()) {
        std::fprintf(stderr, "%s: missing FILE (try --help)\n", kName);
        return 2;
    }

    // First pass: walk every record without parsing, so that a bad block or a non-Ethernet
    // interface deep inside a pcapng fails with nothing written to stdout. It only touches
    // record headers of a mapped file, a small fraction of the decoding cost.
    capture::CaptureFile check;
    if (!check.open(path)) {
        std::fprintf(stderr, "insert-dp decode: %s\n", check.error().c_str());
        return 2;
    }
    capture::Frame frame;
    while (check.next(frame)) {
    }
    if (!check.error().empty() && !check.truncated()) {
        std::fprintf(stderr, "insert-dp decode: %s\n", check.error().c_str());
        return 2;
    }

    capture::CaptureFile file;
    if (!file.open(path)) {
        std::fprintf(stderr, "insert-dp decode: %s\n", file.error().c_str());
        return 2;
    }
    Counts counts;
    fmt::memory_buffer out;
    out.append(kCsvHeader);
    bool write_ok = true;
    int write_errno = 0;
    proto::ParsedPacket parsed;
    StopFlag stop;
    install_stop_signals(stop);
    // Rows are whole in the buffer: a stop between frames, or a failed write, ends the
    // output on a row boundary. A closed pipe (`| head`) stops at once.
    while (write_ok && !stop() && file.next(frame)) {
        ++counts.frames;
        switch (proto::parse_frame(frame.data, parsed)) {
            case proto::Verdict::non_roce:
                ++counts.non_roce;
                break;
            case proto::Verdict::malformed:
                ++counts.malformed[static_cast<std::size_t>(parsed.malformed)];
                break;
            case proto::Verdict::roce:
                ++counts.roce;
                append_row(out, frame.index, parsed);
                if (out.size() >= kFlushBytes && !flush(out)) {
                    write_ok = false;
                    write_errno = errno;
                }
                break;
        }
    }
    if (write_ok && (!flush(out) || std::fflush(stdout) != 0)) {
        write_ok = false;
        write_errno = errno;
    }
    restore_stop_signals();
    if (summary) print_summary(path, counts);
    int status = 0;
    if (!file.error().empty()) {
        if (file.truncated()) {
            std::fprintf(stderr,
                         "insert-dp decode: warning: %s (capture cut short; %llu complete "
                         "frames decoded)\n",
                         file.error().c_str(), static_cast<unsigned long long>(counts.frames));
        } else {
            std::fprintf(stderr, "insert-dp decode: %s; the %llu frames before it were decoded\n",
                         file.error().c_str(), static_cast<unsigned long long>(counts.frames));
            status = 2;
        }
    }
    if (!write_ok) {
        std::fprintf(stderr, "insert-dp decode: writing stdout failed after %llu frames: %s\n",
                     static_cast<unsigned long long>(counts.frames), std::strerror(write_errno));
        return 1;
    }
    if (const int sig = stop_signal(); sig != 0) {
        std::fprintf(stderr, "insert-dp decode: interrupted by %s after %llu frames\n",
                     signal_name(sig), static_cast<unsigned long long>(counts.frames));
        return 128 + sig;
    }
    return status;
}

}  // namespace insert::tools
