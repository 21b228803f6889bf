// Names of DPDK objects (rings, mempools, memzones) live in one namespace per process and
// must be unique while the object exists. An object is named after its owner's address,
// which no other live owner shares, and its index among the owner's objects: no counter
// shared between owners, and the name says whose it is in a memzone dump.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace insert::pipeline {

// "<kind>_<owner address in hex>_<index>": under 30 characters (RTE_RING_NAMESIZE,
// RTE_MEMPOOL_NAMESIZE) for a kind of up to 8 characters.
inline std::string dpdk_name(const char* kind, const void* owner, unsigned index = 0) {
    char name[32];
    std::snprintf(name, sizeof name, "%.8s_%llx_%u", kind,
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(owner)), index);
    return name;
}

}  // namespace insert::pipeline
