// Ring-buffer events -> JSON Lines records (schema: docs/insert-trace.md). Field names are
// stable: the correlator joins on them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hosttrace/process_table.hpp"
#include "verbs_trace.h"

namespace insert::hosttrace {

// CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns: added to event timestamps for `wall_ns`.
int64_t wall_clock_offset_ns();

const char* event_name(uint32_t kind);

// Updates `table` with the event and appends its record to `out`: one line ending in a
// newline, `host` its last field. Writes into the string's spare room: a caller that
// reuses one string allocates nothing per event.
void decode_event(const insert_trace_event& e, ProcessTable& table, int64_t wall_offset_ns,
                  std::string_view host, std::string& out);

}  // namespace insert::hosttrace
