// What a live run does with what it decides, besides its records (--listen and --nats runs
// alike): alerts and congestion episodes told as they are decided, and the --records file
// reopened on SIGHUP.
#pragma once

#include <optional>

#include "correlator/live/live_correlator.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/output_stream.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/run/run_options.hpp"

namespace insert::correlate {

// Alerts and congestion episodes are told as they are decided (docs/correlation.md 8, 9):
// on stderr (unless --quiet) and to Alertmanager.
void tell_as_decided(LiveSettings& settings, const CorrelateOptions& options,
                     std::optional<AlertmanagerClient>& alertmanager);

// SIGHUP: the --records file reopened (logrotate).
void reopen_records(const CorrelateOptions& options, RecordSink& sink, OutputStream& out);

}  // namespace insert::correlate
