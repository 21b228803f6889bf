// One insert-correlate run over inputs read to their end: ingest, join, views, records
// and the terminal report. Returns the process exit status (0, or 2 with a message on
// stderr naming the input or output at fault).
#pragma once

#include "correlator/tools/correlate_options.hpp"

namespace insert::correlate {

int run_correlate(const CorrelateOptions& options);

}  // namespace insert::correlate
