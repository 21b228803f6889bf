// insert-dp: the INSERT dataplane. Dispatches to one subcommand per file.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "dataplane/common/version.hpp"
#include "dataplane/tools/commands.hpp"

namespace {

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

constexpr Command kCommands[] = {
    {"decode", insert::tools::run_decode, "print every RoCEv2 packet of a capture as CSV"},
    {"replay", insert::tools::run_replay, "offline telemetry over a capture, on N worker lcores"},
    {"inline", insert::tools::run_inline, "bump in the wire between two ports, observing RoCE"},
    {"monitor", insert::tools::run_monitor, "receive-only telemetry on mirror ports"},
    {"bench", insert::tools::run_bench, "synthetic traffic through the real workers: Mpps, Gb/s"},
};

void usage(std::FILE* out) {
    // The headings are the ones help2man turns into the man page's sections.
    std::fprintf(out,
                 "Usage: insert-dp COMMAND [OPTIONS]   (insert-dp COMMAND --help)\n"
                 "  or:  insert-dp --help | --version\n\nCommands:\n");
    for (const Command& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
    std::fprintf(out,
                 "\nExamples:\n"
                 "  insert-dp decode pcaps/rc_mixed.pcap > packets.csv\n"
                 "  insert-dp replay pcaps/rc_mixed.pcap --workers 2 --records out.jsonl\n"
                 "  insert-dp inline --iface veth-a --iface veth-b --records live.jsonl\n"
                 "  insert-dp monitor --iface span0\n"
                 "  insert-dp bench --workers 2 --seconds 5\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string_view cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        usage(stdout);
        return 0;
    }
    if (cmd == "--version") {
        std::printf("%s\n", insert::version_with_schema("insert-dp").c_str());
        return 0;
    }
    for (const Command& c : kCommands)
        if (cmd == c.name) return c.run(argc - 1, argv + 1);
    std::fprintf(stderr, "insert-dp: unknown command '%s' (try insert-dp --help)\n", argv[1]);
    return 2;
}
