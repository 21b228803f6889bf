// The page's first section, before any chart or counter: what happened in the run
// (docs/correlation.md 10). Alerts grouped as "who attacked whom" (kind, victim
// comm[pid]@host, ip and QPNs in hex, the source - "claimed source X (possibly spoofed)"
// when the record says it is only claimed -, how many and since when); congestion
// episodes as "who congested whom" (contributors by byte share, victims by the latency
// added per message); or, when there was neither, that there was neither.
#pragma once

#include <string>

#include "correlator/report/report_data.hpp"

namespace insert::correlate::report {

// `live`: the records so far of a running correlator (its --http page).
void append_verdict(std::string& out, const ReportData& d, bool live);

}  // namespace insert::correlate::report
