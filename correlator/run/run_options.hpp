// One insert-correlate run's configuration: what the command line (tools/) fills and the
// batch and live runs read. Typed and already validated: the runs never see text options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "correlator/join/clock.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

// --nats: the live run's inputs are partitions of the bus (docs/scale-out.md "The
// consumers").
struct BusOptions {
    std::vector<std::string> servers;  // nats://HOST:PORT, one or more; empty: no bus
    std::string url;                   // --nats as given (the lines it says start with it)
    std::string subject = "insert";    // the stream and subject prefix
    unsigned partitions = 8;           // the deployment's count
    std::vector<unsigned> owned;       // --partitions: may own, ascending (default: all)
    std::string hosts;                 // --nats-hosts: the deployment's hosts file
    std::string instance;              // --instance: the name on the bus (default: made up)
    unsigned replicas = 0;             // of the output stream it makes (0: the input's)
    double lease_ttl_s = 5;            // a dead instance's partitions are taken after this
    std::string on_stop = "auto";      // --on-stop: auto, decide, hand-over

    bool enabled() const { return !servers.empty(); }
};

struct CorrelateOptions {
    std::vector<std::string> inputs;  // files, "-" (stdin)
    std::string records;              // JSON Lines output: file, "-" (stdout) or empty (none)
    unsigned threads = 0;             // 0: every CPU
    ClockPolicy clock;
    bool quiet = false;     // no terminal report
    bool progress = false;  // progress lines on stderr even when it is not a terminal
    // Live input (docs/correlation.md 7).
    std::string listen;           // Unix stream socket to accept producers on
    std::string listen_group;     // its group (name as given), with its id:
    int64_t listen_gid = -1;      // -1: the process's
    uint64_t max_line = 1 << 20;  // live streams: a longer line closes its stream
    BusOptions bus;               // --nats: partitions of the bus instead
    double max_delay_s = 1.0;     // how late a record may arrive behind its stream
    double ttl_s = 30.0;          // undecided items are decided after this
    double interval_s = 1.0;      // app records and windows, wall clock
    double duration_s = 0;        // 0: until SIGINT/SIGTERM (or every input ended)
    // Security alerts (docs/correlation.md 8).
    SecurityOptions security;
    CongestionOptions congestion;
    AlertDeliveryOptions alertmanager;  // url http[s]://HOST:PORT: deliver alerts there too
    std::string html;  // also write the records as an HTML report (correlator/report)
    std::string http;  // ADDR:PORT: serve /metrics and the live page (run/run_service.hpp)
};

}  // namespace insert::correlate
