// insert-dp inline / monitor: the command line (options and their checks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/common/nats_options.hpp"
#include "dataplane/ports/source_config.hpp"

namespace insert::tools {

struct LiveOptions {
    std::vector<std::string> ifaces;
    std::vector<std::string> vdevs;
    std::vector<std::string> pci;
    unsigned workers = 1;
    bool records_given = false;
    std::string records;  // a file, "-" (stdout) or "unix:PATH" (insert-correlate --listen)
    std::size_t records_buffer = 16u << 20;  // unix:PATH: kept while the collector is away
    double interval_s = 1;
    std::string offload = "auto";
    std::string shard = "ip-pair";
    uint32_t max_endpoints = 1u << 20;
    double idle_timeout_s = 60;
    unsigned record_ring = 16384;
    std::string record_full = "wait";
    double duration_s = 0;
    bool hugepages = false;
    bool quiet = false;
    bool no_view = false;
    bool no_hairpin = false;
    std::string http;              // --http ADDR:PORT: /metrics (empty: none)
    std::string telemetry_prefix;  // --telemetry-prefix NAME: EAL's --file-prefix, fixed
    NatsOptions nats;              // --nats: the records to NATS JetStream too (docs/scale-out.md)
    std::vector<std::string> eal_args;

    std::size_t ports() const { return ifaces.size() + vdevs.size() + pci.size(); }
    bool records_to_stdout() const { return records_given && records == "-"; }
};

// 0 parsed, 1 --help printed, 2 error printed (one line naming the option).
int parse_live_options(const char* name, ports::PortMode mode, int argc, char** argv,
                       LiveOptions& opt);

// The same name twice in `names`, in `dup`.
bool find_duplicate(const std::vector<std::string>& names, std::string& dup);

}  // namespace insert::tools
