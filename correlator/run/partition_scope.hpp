// What one correlator instance over some of the bus's partitions reads and speaks for
// (docs/scale-out.md "The consumers"), from the partition rule the producers route by
// (dataplane/common record_route, host_partition):
// - taking: a record that goes to several partitions - a message between two hosts, the
//   control plane that goes to all of them - comes on each; the instance takes it once,
//   from the first of its own partitions that the record goes to. insert-trace's `tick`
//   (time only, which the join never pairs) is taken on each, so that every stream of a
//   quiet tracer keeps moving;
// - speaking: an instance writes the records decided about its own hosts only - e2e,
//   alerts and app records by the message's requester (source) address, congestion by its
//   destination, pair and clock by the QP's and host's address - so that the instances'
//   records together are one process's.
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

    // Whether the instance takes `line`, which came on its partition `k`.
    bool takes(std::string_view line, unsigned k) const;
    // Whether records about the host of address `ip` are the instance's to write.
    bool owns(const Ip& ip);

  private:
    std::vector<bool> owned_;  // by partition
    std::size_t owned_count_ = 0;
    unsigned first_owned_ = 0;
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
