// insert-trace's command line: one validated configuration struct.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/common/nats_options.hpp"

namespace insert::hosttrace {

struct TraceOptions {
    std::string output = "-";            // file or "-" (stdout)
    std::string unix_socket;             // connect and write there instead
    uint64_t unix_buffer = 16u << 20;    // --unix: bytes kept while the collector is away
    pid_t pid = 0;                       // 0: every process
    std::string comm;                    // exact comm (16 bytes max) or empty
    uint64_t cgroup_id = 0;              // cgroup v2 id or 0
    std::vector<std::string> libraries;  // libibverbs copies to probe (empty: the system's)
    uint32_t datapath_sample = 1;        // 0 off, 1 every call, N one in N
    uint32_t ringbuf_bytes = 4u << 20;
    bool use_sites = true;    // softverbs' trace sites where exported (--sites off: entries)
    uint32_t scan_ms = 1000;  // look for new libibverbs copies; 0 off
    double duration_s = 0;    // 0: until SIGINT/SIGTERM
    bool verbose = false;
    // Names the clock domain of every record (`host` field): the correlator keys processes
    // and clock offsets by it. Default: this machine's hostname.
    std::string host;
    // --netns NAME|PATH: only processes in this network namespace (one tracer per emulated
    // host when namespaces stand in for machines). 0: every namespace.
    std::string netns;
    uint64_t netns_inode = 0;
    // --nats: the records to NATS JetStream too (docs/scale-out.md), as configured here.
    NatsOptions nats;
    NatsConfig nats_config;
};

// Returns -1 to go on, 0 after --help, 2 with `error` set for a bad option.
int parse_trace_options(int argc, char** argv, TraceOptions& out, std::string& error);

std::string datapath_text(uint32_t sample);

}  // namespace insert::hosttrace
