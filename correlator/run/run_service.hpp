// insert-correlate --http ADDR:PORT (docs/correlation.md 11): /metrics (run_metrics.hpp) and
// a live page, `/` - the HTML report (correlator/report) of the records written so far,
// made anew every --interval and reloading itself as often. Both are made on the run's
// thread, after each window of a live run and at the end of any run, and handed to the
// HTTP server's thread as finished text behind a mutex: the server never reads the
// correlator's state, the run never waits for a client.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "correlator/input/ingest.hpp"
#include "correlator/live/live_correlator.hpp"
#include "correlator/output/alert_delivery.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/report/html_report.hpp"
#include "correlator/report/report_data.hpp"
#include "correlator/run/run_metrics.hpp"
#include "correlator/run/run_options.hpp"
#include "dataplane/common/http_server.hpp"

namespace insert::correlate {

class RunService {
  public:
    RunService(const CorrelateOptions& options, bool live);
    ~RunService();

    // Binds --http and starts serving; false with `error` ("--http ADDR:PORT: ...").
    bool start(std::string& error);

    // Every record line the run writes goes to the metrics and the page - and to `html`
    // (--html), the observer the sink had.
    void observe(RecordSink& sink, std::optional<report::HtmlReport>& html);
    // Counts the alerts and episodes as they are told (chained before what `settings` had).
    void watch(LiveSettings& settings);
    // After a live window: the engines' counts so far (one, or a join per partition of the
    // bus); the metrics and the page made anew.
    void window(const std::vector<const LiveCorrelator*>& engines, const IngestCounts& inputs,
                std::vector<ProducerState> producers,
                const std::optional<AlertmanagerClient>& alertmanager);
    // --nats: the instance's partitions and messages (with each window).
    void bus(const BusState& state) { state_.bus = state; }
    // The summary is written: the final counts (served until the run returns).
    void finish(const SummaryCounts& summary);

  private:
    void publish();
    std::shared_ptr<const std::string> take(const std::shared_ptr<const std::string>& text);

    const CorrelateOptions& options_;
    const bool live_;
    http::HttpServer server_;
    RunMetrics metrics_;
    RunState state_;
    // The page: the report's data of every record line, and the chart library.
    report::ReportData page_data_;
    std::string chart_library_;
    std::string page_error_;  // why there is no page (no Chart.js), or empty
    std::string source_;
    uint64_t page_lines_ = ~uint64_t{0};  // the lines the last page was made of
    // What the server's thread reads: finished text, swapped in whole.
    std::mutex mutex_;
    std::shared_ptr<const std::string> metrics_text_;
    std::shared_ptr<const std::string> page_;
};

}  // namespace insert::correlate
