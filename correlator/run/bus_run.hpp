// insert-correlate --nats: one instance of a correlator spread over the bus
// (docs/scale-out.md "Leases and takeover"). The instance owns its share of the partitions
// through leases (dataplane/common/nats_leases.hpp), holds a join per partition it owns
// (partition_join.hpp) fed from the partition's consumer (bus_inputs.hpp), and publishes
// what the joins decide to the output stream PREFIX-out - each record once, whichever
// instance decided it and however often the partition moved.
//
// Stopping (SIGINT, SIGTERM, --duration): while other instances are alive it hands its
// partitions over - what it decided is published and acknowledged, its leases deleted, and
// what it held undecided is decided by the next owner, which rebuilds the join from the
// partition's first message. The last instance alive decides everything it holds, as any
// live run does at its end.
#pragma once

#include "correlator/run/run_options.hpp"

namespace insert::correlate {

int run_bus(const CorrelateOptions& options);

}  // namespace insert::correlate
