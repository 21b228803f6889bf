// Writes a HostTrace as insert-trace's JSON Lines (docs/insert-trace.md "Output"): one record
// per line, the fields in the order insert-trace prints them, `host` last (insert-trace
// --host appends it to every record).
#pragma once

#include <string>

#include "bench/gen/host_trace.hpp"
#include "bench/gen/json_out.hpp"

namespace insert::gen {

class Simulator;

// The host's name in every record: "h" and its index in the scenario.
std::string trace_host_name(std::size_t host);

// False with `error` (and no file left) if the file cannot be written.
bool write_host_traces(const Scenario& sc, const Simulator& sim, const HostTrace& trace,
                       const std::string& path, std::string& error);

// The same records into any JsonOut (tests).
void write_host_records(const Scenario& sc, const Simulator& sim, const HostTrace& trace,
                        JsonOut& out);

}  // namespace insert::gen
