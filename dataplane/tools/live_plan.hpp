// insert-dp inline / monitor before EAL starts: everything that can be refused is checked
// (interfaces and their MTUs, packet-socket rights, PCI addresses, hugepages, the memory
// the engines will lock), and the ports' configuration and EAL options are derived.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/ports/source_config.hpp"
#include "dataplane/tools/live_options.hpp"

namespace insert::tools {

struct LivePlan {
    ports::PortSourceConfig ports;
    std::vector<std::string> eal_args;  // the user's, plus one device per port
    uint64_t memory_bytes = 0;          // mbufs and record rings, through DPDK
    bool need_huge = false;             // --hugepages or NIC ports
};

// False and a one-line `error` naming what is wrong (exit status 2). Warnings (MTUs that
// differ) go to stderr prefixed with `name`.
bool plan_live(const char* name, ports::PortMode mode, LiveOptions& opt, LivePlan& plan,
               std::string& error);

}  // namespace insert::tools
