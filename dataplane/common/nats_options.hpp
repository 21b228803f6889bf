// The producers' --nats options, one set for insert-dp (replay, inline, monitor) and
// insert-trace (docs/scale-out.md "Options"): added to a CLI11 command line, checked, and
// turned into a NatsConfig.
#pragma once

#include <cstdint>
#include <string>

#include "dataplane/common/nats_publisher.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace insert {

struct NatsOptions {
    std::string url;  // nats://HOST:PORT[,nats://HOST:PORT...]; empty: no NATS output
    std::string subject = "insert";
    unsigned partitions = 8;
    unsigned replicas = 1;
    std::string hosts;
    uint64_t buffer = 64u << 20;
    // The first --nats-* option given on the command line (they need --nats), or empty.
    std::string given;

    bool enabled() const { return !url.empty(); }
};

// --nats, --nats-subject, --nats-partitions, --nats-replicas, --nats-hosts, --nats-buffer.
void add_nats_options(CLI::App& app, NatsOptions& options);

// After parsing: the configuration (`label` starts its stderr lines), or false with `error`
// (one line naming the option) - a --nats-* option without --nats, a URL that is not
// nats://, or a build without libnats.
bool nats_config_from(const NatsOptions& options, const std::string& label,
                      const std::string& producer, NatsConfig& config, std::string& error);

}  // namespace insert
