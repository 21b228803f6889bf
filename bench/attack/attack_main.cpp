// insert-attack: the two attackers of the emulated cluster demo (docs/demo.md). Each run
// prints one JSON line on stdout saying exactly what it did, the ground truth that the
// correlator's alerts are checked against.
#include <cstdint>
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "bench/attack/inject.hpp"
#include "bench/attack/rkey_guess.hpp"
#include "dataplane/common/version.hpp"

namespace {

// Decimal or 0x-prefixed hex (perftest prints QPNs, PSNs, rkeys and addresses in hex); a
// leading 0 is not octal. False if `text` is not such a number or does not fit in `bits`.
bool parse_number(const std::string& text, unsigned bits, uint64_t& out) {
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const std::string digits = hex ? text.substr(2) : text;
    if (digits.empty() || digits.size() > 20) return false;
    std::size_t used = 0;
    try {
        out = std::stoull(digits, &used, hex ? 16 : 10);
    } catch (const std::exception&) {
        return false;
    }
    return used == digits.size() && (bits == 64 || out < (uint64_t{1} << bits));
}

// A CLI11 check for such numbers.
CLI::Validator number(unsigned bits) {
    return CLI::Validator(
        [bits](std::string& text) -> std::string {
            uint64_t v;
            return parse_number(text, bits, v) ? "" : "expected a number (decimal or 0x hex)";
        },
        "NUMBER");
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"insert-attack: RDMA attackers for the emulated cluster (docs/demo.md)",
                 "insert-attack"};
    app.set_version_flag("--version", insert::version_line("insert-attack"),
                         "print the version and exit");
    app.require_subcommand(1);
    app.footer(
        "Each run prints one JSON line on stdout (what was targeted and sent); errors: one\n"
        "line on stderr, the JSON line with \"error\", exit 1; bad options: exit 2.\n"
        "Examples (softverbs: LD_LIBRARY_PATH=build/hosttrace/softverbs):\n"
        "  insert-attack rkey-guess --server 10.88.0.5 --port 18515 --count 8\n"
        "  insert-attack inject --dst 10.88.0.15 --qpn 0x5a0100 --psn 0x12ab34 \\\n"
        "      --rkey 0x1b7 --va 0x5559bcd36000 --src 10.88.0.1    # spoofed as the peer\n"
        "  insert-attack inject ... --op write-first --len 1024 --dma-len 4096 --src ...\n");

    insert::attack::RkeyGuessOptions guess;
    auto* g = app.add_subcommand(
        "rkey-guess",
        "connect to a perftest server as its client (perftest's TCP exchange), then RDMA "
        "WRITE to its buffer with guessed rkeys (advertised + k * step, k = 1..count)");
    g->add_option("--server", guess.server_ip, "the perftest server's address")->required();
    g->add_option("--port", guess.port, "its TCP port (perftest -p; default 18515)");
    g->add_option("--local", guess.local_ip,
                  "verbs device address to use (default: the first device)");
    g->add_option("--count", guess.count, "rkeys to try (default 8)")
        ->check(CLI::Range(1u, 100000u));
    g->add_option("--step", guess.step, "distance between guessed rkeys (default 1)")
        ->check(CLI::Range(1u, 0xFFFFFFFFu));
    g->add_option("--len", guess.len, "bytes per WRITE, at most 4096: one packet (default 64)")
        ->check(CLI::Range(1u, 4096u));
    g->add_option("--perftest-version", guess.perftest_version,
                  "version this client announces (default 6.06, Debian 12's perftest)");
    g->add_option("--connect-timeout", guess.connect_timeout_s,
                  "seconds to wait for the server to listen (default 20)")
        ->check(CLI::Range(0.1, 3600.0));
    g->add_option("--hold", guess.hold_s,
                  "seconds to keep the connection after the guesses (default 0)")
        ->check(CLI::Range(0.0, 3600.0));

    insert::attack::InjectOptions inj;
    auto* i = app.add_subcommand(
        "inject",
        "send crafted RoCEv2 request packets (valid ICRC) to a QP through a raw socket, from "
        "this host's address or spoofed");
    i->add_option("--dst", inj.dst_ip, "the victim QP's address")->required();
    std::string qpn, psn = "0", rkey = "0", va = "0";
    i->add_option("--qpn", qpn, "the victim QP number (decimal or 0x hex)")
        ->required()
        ->check(number(24));
    i->add_option("--psn", psn, "PSN of the first packet (default 0)")->check(number(24));
    i->add_option("--src", inj.src_ip,
                  "source address to claim (default: this host's address towards --dst)");
    i->add_option("--op", inj.op,
                  "write (RDMA WRITE Only, default), send (SEND Only) or write-first (RDMA "
                  "WRITE First whose Middle and Last never come: a message that never "
                  "completes)")
        ->check(CLI::IsMember({"write", "send", "write-first"}));
    i->add_option("--dma-len", inj.dma_len,
                  "write-first: the RETH length, more than --len (default 4 x --len)")
        ->check(CLI::Range(1u, 0x7FFFFFFFu));
    i->add_option("--rkey", rkey, "R_Key of the WRITE (decimal or 0x hex)")->check(number(32));
    i->add_option("--va", va, "remote address of the WRITE (decimal or 0x hex)")->check(number(64));
    i->add_option("--len", inj.len, "payload bytes per packet, at most 4096 (default 64)")
        ->check(CLI::Range(0u, 4096u));
    i->add_option("--count", inj.count, "packets, with consecutive PSNs (default 1)")
        ->check(CLI::Range(1u, 100000u));
    i->add_option("--sport", inj.sport, "UDP source port (default 4791, as softverbs sends)");
    i->add_option("--gap-ms", inj.gap_ms, "milliseconds between packets (default 1)")
        ->check(CLI::Range(0.0, 10000.0));

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::printf("%s\n", e.what());
        return 0;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "insert-attack: %s\n", e.what());
        return 2;
    }

    uint64_t v = 0;
    parse_number(qpn, 24, v);
    inj.qpn = static_cast<uint32_t>(v);
    parse_number(psn, 24, v);
    inj.psn = static_cast<uint32_t>(v);
    parse_number(rkey, 32, v);
    inj.rkey = static_cast<uint32_t>(v);
    parse_number(va, 64, inj.va);

    bool ok = false;
    nlohmann::ordered_json line = g->parsed() ? insert::attack::run_rkey_guess(guess, ok)
                                              : insert::attack::run_inject(inj, ok);
    std::puts(line.dump().c_str());
    std::fflush(stdout);
    if (!ok) {
        std::fprintf(stderr, "insert-attack: %s\n", line.value("error", "failed").c_str());
        return 1;
    }
    return 0;
}
