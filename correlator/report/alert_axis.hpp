// The alert timeline's time axis (docs/correlation.md 10). It spans the alerts, not the
// run; and where the alerts come in bursts far apart (a scan in the first milliseconds, a
// lone probe a second later) it is broken: each burst a segment of its own, linear inside,
// wider the more alerts it holds, the empty time between them elided (the page marks each
// break with the time it hides). So neither a run much longer than its alerts nor a few
// stragglers pile the alerts at one edge. Positions are display units, 0..kWidth.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace insert::correlate::report {

struct AxisSegment {
    double from_s = 0, to_s = 0;  // the time it shows (its alerts, padded)
    double x0 = 0, x1 = 0;        // where it lies on the axis
    uint64_t alerts = 0;
};

class AlertAxis {
  public:
    static constexpr double kWidth = 1000;
    static constexpr std::size_t kMaxBreaks = 4;
    static constexpr double kBreakWidth = 40;  // display units per break
    static constexpr double kBreakGap = 0.25;  // a gap this share of the alerts' span or more

    // `alerts`: each alert's first and last offence, seconds since the report's origin;
    // `run_s`: the records' span (for the width around alerts at a single instant).
    AlertAxis(const std::vector<std::pair<double, double>>& alerts, double run_s);

    // The position of a time: linear in the segment that holds it (or the nearest).
    double x(double t_s) const;
    const std::vector<AxisSegment>& segments() const { return segments_; }

  private:
    std::vector<AxisSegment> segments_;
};

}  // namespace insert::correlate::report
