// The Prometheus text exposition format (version 0.0.4), as /metrics serves it: each metric
// family once, with its `# HELP` and `# TYPE` lines, then its samples; label values
// escaped (backslash, double quote, line feed), HELP text too (backslash, line feed);
// counters and gauges as integers when they are, floating-point values in their shortest
// exact form, laid out as Prometheus's own clients write them (0.0002, 1e-05, 2.5e+06; NaN,
// +Inf, -Inf); histograms with fixed buckets,
// cumulative `_bucket{le=...}` series, `_sum` and `_count`.
//
// The writer only formats: names and label names come from the program (checked in debug
// builds), values from anywhere. Which metrics exist and what they mean is the caller's
// (docs/correlation.md and docs/live.md, "Metrics").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace insert::prometheus {

enum class MetricType : uint8_t { counter, gauge, histogram };

struct Label {
    std::string_view name;
    std::string_view value;
};

// Observations counted into fixed buckets (upper bounds, increasing; +Inf is implied).
// The bounds are not copied: they must outlive the histogram (a static table).
class Histogram {
  public:
    explicit Histogram(std::span<const double> bounds)
        : bounds_(bounds), counts_(bounds.size() + 1, 0) {}

    void observe(double v);
    void merge(const Histogram& other);  // same bounds

    std::span<const double> bounds() const { return bounds_; }
    // Per bucket, not cumulative; the last is (largest bound, +Inf].
    const std::vector<uint64_t>& counts() const { return counts_; }
    uint64_t count() const { return count_; }
    double sum() const { return sum_; }

  private:
    std::span<const double> bounds_;
    std::vector<uint64_t> counts_;
    uint64_t count_ = 0;
    double sum_ = 0;
};

// 1 us to 10 s in steps of 1, 2, 5 per decade: latencies in seconds.
std::span<const double> latency_buckets_seconds();

class TextWriter {
  public:
    explicit TextWriter(std::string& out) : out_(out) {}

    // Starts a family: its HELP and TYPE lines. Its samples follow, before the next family.
    TextWriter& family(std::string_view name, MetricType type, std::string_view help);

    // A sample of the current counter or gauge family.
    TextWriter& sample(std::initializer_list<Label> labels, uint64_t value) {
        return sample(std::span<const Label>(labels.begin(), labels.size()), value);
    }
    TextWriter& sample(std::initializer_list<Label> labels, double value) {
        return sample(std::span<const Label>(labels.begin(), labels.size()), value);
    }
    TextWriter& sample(std::initializer_list<Label> labels, int64_t value) {
        return sample(std::span<const Label>(labels.begin(), labels.size()), value);
    }
    TextWriter& sample(std::span<const Label> labels, uint64_t value);
    TextWriter& sample(std::span<const Label> labels, int64_t value);
    TextWriter& sample(std::span<const Label> labels, double value);
    // The series of one histogram of the current histogram family.
    TextWriter& histogram(std::initializer_list<Label> labels, const Histogram& h) {
        return histogram(std::span<const Label>(labels.begin(), labels.size()), h);
    }
    TextWriter& histogram(std::span<const Label> labels, const Histogram& h);

  private:
    void series(std::string_view suffix, std::span<const Label> labels, const Label* extra);

    std::string& out_;
    std::string name_;  // of the current family
};

// Appends `v` to `out` as the format writes a value.
void append_value(std::string& out, double v);
// Appends a label value or HELP text escaped (`quote`: also the double quote).
void append_escaped(std::string& out, std::string_view text, bool quote);
// Whether `name` is a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or label name (no ':').
bool valid_name(std::string_view name, bool metric);

}  // namespace insert::prometheus
