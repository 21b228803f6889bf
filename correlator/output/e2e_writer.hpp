// The `e2e` records of a batch run: one line per joined message, the largest part of the
// output (a sixth of a run's instructions). With more than one thread, chunks of rows are
// formatted in parallel and written, and added to their applications, in order: the bytes
// are those of the one-thread writer.
#pragma once

#include "correlator/join/correlation.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/output/views.hpp"

namespace insert::correlate {

void write_e2e(const JoinResult& joined, const HostModel& model, const WireMsgs& msgs,
               const HostNames& names, AppAggregator& apps, RecordSink& sink);

}  // namespace insert::correlate
