// Which hosts a partition's join (partition_join.hpp; docs/scale-out.md "Leases and
// takeover") speaks for, from the partition rule the producers route by
// (dataplane/common host_partition): it writes the records decided about its own hosts
// only - e2e, alerts and app records by the message's requester (source) address,
// congestion by its destination, pair and clock by the QP's and host's address - so that
// the partitions' records together are one process's.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "correlator/input/records.hpp"
#include "correlator/run/run_options.hpp"
#include "dataplane/common/host_partition.hpp"

namespace insert::correlate {

class PartitionScope {
  public:
    // False with `error` (naming --nats-hosts) when the hosts file does not load.
    bool load(const BusOptions& options, std::string& error);

    // Whether records about the host of address `ip` are the join's to write.
    bool owns(const Ip& ip);

  private:
    std::vector<bool> owned_;  // by partition
    bool every_ = false;       // one partition in all: every host is its own
    HostMap hosts_;
    std::unique_ptr<HostPartitions> partitions_;  // refers to hosts_
    // Addresses looked up: every e2e record and offence asks. Emptied past a bound (a spray
    // of spoofed sources is many addresses).
    struct Hash {
        std::size_t operator()(const std::array<uint8_t, 16>& b) const;
    };
    std::unordered_map<std::array<uint8_t, 16>, bool, Hash> owns_;
};

}  // namespace insert::correlate
