#include "dataplane/common/nats_options.hpp"

#include <CLI/CLI.hpp>

namespace insert {

namespace {

// Partitions: subjects PREFIX.part.0 .. PREFIX.part.N-1. A few per correlator instance is
// plenty; 1024 leaves room for a thousand instances.
constexpr unsigned kMaxPartitions = 1024;
constexpr unsigned kMaxReplicas = 5;  // JetStream's limit

}  // namespace

void add_nats_options(CLI::App& app, NatsOptions& o) {
    app.add_option("--nats", o.url,
                   "also publish the records to NATS JetStream (docs/scale-out.md): "
                   "nats://HOST:PORT, several comma-separated for a cluster; started whether "
                   "the bus is up or not");
    // Each --nats-* option notes that it was given (the App is gone when they are checked).
    const auto note = [&o](const char* name) {
        return [&o, name](const std::string&) {
            if (o.given.empty()) o.given = name;
        };
    };
    app.add_option("--nats-subject", o.subject,
                   "with --nats: subject prefix and stream name (default insert: subjects "
                   "insert.part.K)")
        ->each(note("--nats-subject"));
    app.add_option("--nats-partitions", o.partitions,
                   "with --nats: the deployment's partition count (default 8; every producer "
                   "and correlator the same)")
        ->check(CLI::Range(1u, kMaxPartitions))
        ->each(note("--nats-partitions"));
    app.add_option("--nats-replicas", o.replicas,
                   "with --nats: replicas of the stream when this producer creates it "
                   "(default 1)")
        ->check(CLI::Range(1u, kMaxReplicas))
        ->each(note("--nats-replicas"));
    app.add_option("--nats-hosts", o.hosts,
                   "with --nats: hosts file, a line per multi-homed host: PRIMARY EXTRA... "
                   "(its addresses share the primary's partition)")
        ->each(note("--nats-hosts"));
    app.add_option("--nats-buffer", o.buffer,
                   "with --nats: bytes of records kept while the bus is away or behind "
                   "(default 67108864); more are dropped and counted")
        ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 34))
        ->each(note("--nats-buffer"));
}

bool nats_config_from(const NatsOptions& o, const std::string& label, const std::string& producer,
                      NatsConfig& config, std::string& error) {
    if (!o.enabled()) {
        if (o.given.empty()) return true;
        error = o.given + ": needs --nats URL";
        return false;
    }
    if (!nats_available()) {
        error = "--nats: this build has no NATS client (install libnats-dev and rebuild)";
        return false;
    }
    config = NatsConfig();
    std::string_view rest = o.url;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string_view url = rest.substr(0, comma);
        if (!url.starts_with("nats://") || url.size() <= 7) {
            error = "--nats " + std::string(url) + ": expected nats://HOST:PORT";
            return false;
        }
        config.servers.emplace_back(url);
        rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
    config.prefix = o.subject;
    config.partitions = o.partitions;
    config.replicas = o.replicas;
    config.hosts_file = o.hosts;
    config.buffer_bytes = o.buffer;
    config.producer = producer;
    config.label = label + ": --nats " + o.url;
    return true;
}

}  // namespace insert
