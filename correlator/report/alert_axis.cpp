#include "correlator/report/alert_axis.hpp"

#include <algorithm>

namespace insert::correlate::report {

AlertAxis::AlertAxis(const std::vector<std::pair<double, double>>& alerts, double run_s) {
    if (alerts.empty()) return;
    std::vector<std::pair<double, double>> sorted = alerts;
    for (auto& [t, last] : sorted) last = std::max(t, last);
    std::sort(sorted.begin(), sorted.end());
    double end = sorted[0].second;
    for (const auto& a : sorted) end = std::max(end, a.second);
    const double span = end - sorted[0].first;

    // The gaps between bursts: a gap starts where every earlier alert has ended.
    struct Gap {
        double size;
        std::size_t after;  // the index of the last alert before it
    };
    std::vector<Gap> gaps;
    double reach = sorted[0].second;
    for (std::size_t i = 1; i < sorted.size(); ++i) {
        if (span > 0 && sorted[i].first - reach >= kBreakGap * span)
            gaps.push_back({sorted[i].first - reach, i - 1});
        reach = std::max(reach, sorted[i].second);
    }
    std::stable_sort(gaps.begin(), gaps.end(),
                     [](const Gap& a, const Gap& b) { return a.size > b.size; });
    if (gaps.size() > kMaxBreaks) gaps.resize(kMaxBreaks);
    std::vector<std::size_t> cuts;  // alert indices that end a segment
    for (const Gap& g : gaps) cuts.push_back(g.after);
    cuts.push_back(sorted.size() - 1);
    std::sort(cuts.begin(), cuts.end());

    std::size_t first = 0;
    for (const std::size_t last : cuts) {
        AxisSegment s;
        s.from_s = sorted[first].first;
        s.to_s = sorted[first].second;
        for (std::size_t i = first; i <= last; ++i) s.to_s = std::max(s.to_s, sorted[i].second);
        s.alerts = last - first + 1;
        segments_.push_back(s);
        first = last + 1;
    }

    const std::size_t n = segments_.size();
    const double width = kWidth - kBreakWidth * static_cast<double>(n - 1);
    double x = 0;
    for (AxisSegment& s : segments_) {
        // A segment at one instant: its alerts in the middle of 2% of the span (of the run,
        // when every alert is at that instant).
        const double own = s.to_s - s.from_s;
        const double pad = own > 0
                               ? own * 0.04
                               : std::max(1e-6, n > 1 ? span * 0.01 : std::max(1e-3, run_s * 0.01));
        s.from_s -= pad;
        s.to_s += pad;
        // Every segment a tenth of the width, the rest by the alerts it holds.
        const double share = 0.1 + (1 - 0.1 * static_cast<double>(n)) *
                                       static_cast<double>(s.alerts) /
                                       static_cast<double>(sorted.size());
        s.x0 = x;
        s.x1 = x + width * share;
        x = s.x1 + kBreakWidth;
    }
    segments_.back().x1 = kWidth;  // rounding
}

double AlertAxis::x(double t) const {
    if (segments_.empty()) return 0;
    const AxisSegment* s = &segments_.front();
    for (const AxisSegment& seg : segments_)
        if (t >= seg.from_s) s = &seg;
    const double f = std::clamp((t - s->from_s) / (s->to_s - s->from_s), 0.0, 1.0);
    return s->x0 + f * (s->x1 - s->x0);
}

}  // namespace insert::correlate::report
