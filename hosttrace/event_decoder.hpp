// Ring-buffer events -> JSON Lines records (schema: docs/insert-trace.md). Field names are
// stable: the correlator joins on them.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "hosttrace/process_table.hpp"
#include "verbs_trace.h"

namespace insert::hosttrace {

// CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns: added to event timestamps for `wall_ns`.
int64_t wall_clock_offset_ns();

const char* event_name(uint32_t kind);

// Updates `table` with the event and returns its record.
nlohmann::ordered_json decode_event(const insert_trace_event& e, ProcessTable& table,
                                    int64_t wall_offset_ns);

std::string hex_pointer(uint64_t p);

}  // namespace insert::hosttrace
