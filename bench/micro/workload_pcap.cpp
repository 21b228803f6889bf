// insert-workload-pcap: writes the benchmark workload (workload.hpp) as a nanosecond pcap,
// for replay-speed measurements (docs/performance.md, "Replay next to tshark").
//   insert-workload-pcap OUT.pcap [--endpoints N] [--messages M] [--seed S]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dataplane/capture/pcap_writer.hpp"
#include "dataplane/workload/workload.hpp"

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') {
        std::fprintf(
            stderr,
            "usage: insert-workload-pcap OUT.pcap [--endpoints N] [--messages M] [--seed S]\n");
        return 2;
    }
    insert::workload::WorkloadSpec spec;
    spec.endpoints = 100000;
    spec.messages = 400000;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const unsigned long long v = std::strtoull(argv[i + 1], nullptr, 10);
        if (a == "--endpoints")
            spec.endpoints = static_cast<uint32_t>(v);
        else if (a == "--messages")
            spec.messages = v;
        else if (a == "--seed")
            spec.seed = v;
        else {
            std::fprintf(stderr, "insert-workload-pcap: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    insert::capture::PcapWriter pcap;
    if (!pcap.open(argv[1])) {
        std::fprintf(stderr, "insert-workload-pcap: %s\n", pcap.error().c_str());
        return 2;
    }
    insert::workload::generate_workload(
        spec, [&](uint64_t ts, std::span<const uint8_t> f) { pcap.write(ts, f); });
    const uint64_t frames = pcap.frames();
    if (!pcap.close()) {
        std::fprintf(stderr, "insert-workload-pcap: %s\n", pcap.error().c_str());
        return 1;
    }
    std::printf("%s: %llu frames\n", argv[1], static_cast<unsigned long long>(frames));
    return 0;
}
