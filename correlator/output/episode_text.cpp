#include "correlator/output/episode_text.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace insert::correlate {

std::string duration_text(int64_t ns) {
    const double v = static_cast<double>(ns);
    const int64_t magnitude = std::llabs(ns);
    if (magnitude < 1'000) return fmt::format("{} ns", ns);
    if (magnitude < 1'000'000) return fmt::format("{:.1f} us", v / 1e3);
    if (magnitude < 1'000'000'000) return fmt::format("{:.2f} ms", v / 1e6);
    return fmt::format("{:.2f} s", v / 1e9);
}

namespace {

std::string signed_duration(int64_t ns) {
    return fmt::format("{}{}", ns >= 0 ? '+' : '-', duration_text(std::llabs(ns)));
}

std::string percent(double share) {
    return fmt::format("{:.1f}%", share * 100);
}

}  // namespace

std::string victim_effect(const CongestionEpisode& e, const EpisodeApp& v) {
    std::string text;
    if (v.baseline_net_ns_mean && v.baseline_net_ns_p99) {
        text = fmt::format("{} per message (p99 {}) over its usual {}",
                           signed_duration(v.net_ns_mean - *v.baseline_net_ns_mean),
                           signed_duration(v.net_ns_p99 - *v.baseline_net_ns_p99),
                           duration_text(*v.baseline_net_ns_mean));
    } else {
        text = fmt::format("{} per message over the node's baseline {}",
                           signed_duration(v.net_ns_mean - e.baseline_net_ns),
                           duration_text(e.baseline_net_ns));
    }
    text += fmt::format(", {} msgs; also sends {} of the bytes", v.msgs, percent(v.bytes_share));
    return text;
}

std::string contributor_part(const EpisodeApp& c) {
    return fmt::format("{} of the bytes ({} B, {} msgs){}", percent(c.bytes_share), c.bytes, c.msgs,
                       c.victim ? "; also a victim" : "");
}

}  // namespace insert::correlate
