#include "correlator/run/run_service.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "correlator/report/html_page.hpp"
#include "correlator/report/report_file.hpp"

namespace insert::correlate {

namespace {

// The page's own policy, also sent as a header: it loads nothing from anywhere.
constexpr const char* kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:";
// A page reloading faster than this would spend its time drawing charts.
constexpr double kMinReloadS = 1.0;

}  // namespace

RunService::RunService(const CorrelateOptions& options, bool live)
    : options_(options),
      live_(live),
      server_("insert-correlate"),
      metrics_(live),
      source_(report::run_source(options.inputs, options.listen)) {}

RunService::~RunService() {
    server_.stop();  // before what its handlers read goes
}

bool RunService::start(std::string& error) {
    if (!report::load_chart_library("", chart_library_, page_error_))
        std::fprintf(stderr, "insert-correlate: --http: no live page (%s); /metrics only\n",
                     page_error_.c_str());
    publish();
    server_.handle("/metrics", [this] {
        http::Response r;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = *take(metrics_text_);
        return r;
    });
    server_.handle("/", [this] {
        http::Response r;
        if (!page_error_.empty()) {
            r.status = 503;
            r.body = "no live page: " + page_error_ + "\n";
            return r;
        }
        r.content_type = "text/html; charset=utf-8";
        r.headers["Content-Security-Policy"] = kPagePolicy;
        r.body = *take(page_);
        return r;
    });
    if (!server_.start(options_.http, error)) {
        error = "--http " + error;
        return false;
    }
    if (!options_.quiet)
        std::fprintf(stderr, "insert-correlate: serving %s/ (the live page) and %s/metrics\n",
                     server_.url().c_str(), server_.url().c_str());
    return true;
}

void RunService::observe(RecordSink& sink, std::optional<report::HtmlReport>& html) {
    sink.set_observer([this, &html](std::string_view line) {
        if (html) html->add(line);
        metrics_.record(line);
        if (page_error_.empty()) page_data_.add(line);
    });
}

void RunService::watch(LiveSettings& settings) {
    settings.on_alert_opened = [this, told = std::move(settings.on_alert_opened)](const Alert& a) {
        metrics_.alert_fired(a.kind);
        if (told) told(a);
    };
    settings.on_episode_opened =
        [this, told = std::move(settings.on_episode_opened)](const CongestionEpisode& e) {
            metrics_.episode_fired();
            if (told) told(e);
        };
}

void RunService::window(const std::vector<const LiveCorrelator*>& engines,
                        const IngestCounts& inputs, std::vector<ProducerState> producers,
                        const std::optional<AlertmanagerClient>& alertmanager) {
    state_.inputs = inputs;
    state_.producers = std::move(producers);
    state_.join = JoinCounts{};
    state_.late = state_.held = state_.apps = 0;
    std::vector<std::pair<std::string, ClockEstimate>> clocks;
    std::optional<int64_t> watermark;
    for (const LiveCorrelator* engine : engines) {
        state_.join += engine->join_counts();
        state_.late += engine->late();
        // Several joins (the bus's partitions): the watermark of the one furthest behind.
        if (engine->last_watermark() != INT64_MIN)
            watermark = std::min(watermark.value_or(INT64_MAX), engine->last_watermark());
        state_.held += engine->retained();
        state_.apps += engine->apps().size();
        for (auto& c2 : engine->clocks()) clocks.push_back(std::move(c2));
    }
    if (watermark) state_.watermark_ns = watermark;
    ++state_.windows;
    if (alertmanager) state_.alertmanager = alertmanager->counts();
    metrics_.set_clocks(clocks);
    publish();
}

void RunService::finish(const SummaryCounts& summary) {
    state_.inputs = summary.inputs;
    state_.join = summary.join;
    state_.late = summary.late;
    if (!live_) state_.apps = summary.apps;
    if (!options_.alertmanager.url.empty()) state_.alertmanager = summary.alertmanager;
    state_.producers.clear();  // every input has ended
    state_.finished = true;
    publish();
}

// The text published now, held by the caller: copied out of the lock, never changed.
std::shared_ptr<const std::string> RunService::take(
    const std::shared_ptr<const std::string>& text) {
    std::lock_guard lock(mutex_);
    return text;
}

// Made here, on the run's thread; the server's thread takes them under the lock.
void RunService::publish() {
    auto text = std::make_shared<const std::string>(metrics_.text(state_));
    std::shared_ptr<const std::string> page;
    if (page_error_.empty() && page_data_.lines != page_lines_) {
        page_lines_ = page_data_.lines;
        // A live page reloads itself; a batch run's is made once, at its end.
        page = std::make_shared<const std::string>(
            report::render_page(page_data_, chart_library_, source_,
                                live_ ? std::max(kMinReloadS, options_.interval_s) : 0));
    }
    std::lock_guard lock(mutex_);
    metrics_text_ = std::move(text);
    if (page) page_ = std::move(page);
}

}  // namespace insert::correlate
