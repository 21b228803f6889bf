// What the HTML report keeps of a record stream (docs/correlation.md 6, 8, 9): the e2e
// records are folded into bounded aggregates as they come (latency CDF samples, network
// latency over time per cgroup); the other records are few per run and are kept as their
// lines, up to a limit per type, to be laid out when the page is made.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "correlator/report/alert_groups.hpp"
#include "correlator/report/latency_cdf.hpp"
#include "correlator/report/time_bins.hpp"

namespace insert::correlate::report {

struct ReportLimits {
    std::size_t cdf_apps = 256;        // applications sampled for the CDF
    std::size_t cdf_reservoir = 1024;  // messages sampled per application
    std::size_t cdf_charts = 12;       // applications charted
    std::size_t cdf_points = 200;      // points per CDF
    std::size_t series = 8;            // cgroups with a series of their own
    std::size_t bins = 400;            // time bins at most
    std::size_t apps = 10000;          // app records kept (latest per application)
    std::size_t alert_rows = 1000;     // alert records kept for the table
    std::size_t alert_points = 20000;  // alerts on the timeline
    std::size_t alert_groups = 1000;   // "who attacked whom" groups of the verdict
    std::size_t episodes = 200;        // congestion records kept
    std::size_t pairs = 100;           // pair records kept
    std::size_t clocks = 1000;         // clock records kept
};

struct AlertPoint {
    int64_t t_ns = 0;
    int64_t t_last_ns = 0;
    std::string kind;
    uint64_t count = 0;
    std::string label;  // victim and source, for the tooltip
};

struct EpisodeSpan {
    int64_t t_start_ns = 0;
    int64_t t_end_ns = 0;
    std::string node;
};

class ReportData {
  public:
    explicit ReportData(const ReportLimits& limits = {});

    // One record line (a JSON object, no newline). Lines that are not records of
    // insert-correlate are counted, never fatal.
    void add(std::string_view line);

    const ReportLimits limits;
    uint64_t lines = 0;
    uint64_t unreadable = 0;  // not a JSON object, or without a known "type"
    std::map<std::string, uint64_t> by_type;

    LatencyCdf cdf;
    NetLatencySeries net;
    uint64_t e2e_without_net = 0;
    bool have_time = false;
    int64_t t_min_ns = 0;  // earliest time of any charted record: the charts' origin
    int64_t t_max_ns = 0;

    std::string summary;  // the last summary record
    struct AppLine {
        bool final = false;
        std::string line;
    };
    std::map<std::string, AppLine> apps;  // latest per (host, ip, pid, comm, cgroup)
    uint64_t apps_dropped = 0;
    std::vector<std::string> alerts, episodes, pairs, clocks;
    std::vector<AlertPoint> alert_points;
    uint64_t alert_points_dropped = 0;
    AlertGroups alert_groups;
    std::vector<EpisodeSpan> spans;

  private:
    void note_time(int64_t t_ns);
    bool add_record(simdjson::dom::element record, std::string_view line);
    void add_e2e(simdjson::dom::element record);
    void add_app(simdjson::dom::element record, std::string_view line);
    void add_alert(simdjson::dom::element record, std::string_view line);
    void add_congestion(simdjson::dom::element record, std::string_view line);

    simdjson::dom::parser parser_;
};

// An application's identity and its label, from an e2e record (src_ip) or an app record (ip).
std::string app_key(simdjson::dom::element record, const char* ip_field);
std::string app_label(simdjson::dom::element record, const char* ip_field);

}  // namespace insert::correlate::report
