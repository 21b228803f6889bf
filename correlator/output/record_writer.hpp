// The correlator's records as JSON Lines (SPEC 10 "Records", docs/correlation.md 6): field
// names and order are the contract; every function appends one line to `out`.
#pragma once

#include <string>
#include <string_view>

#include "correlator/join/clock.hpp"
#include "correlator/output/views.hpp"
#include "correlator/usecases/congestion.hpp"
#include "correlator/usecases/security.hpp"

namespace insert::correlate {

class HostNames;

void append_e2e(std::string& out, const E2eRow& row, const HostNames& names);
// `cgroup_path`: the app's cgroup path from insert-trace's `cgroup` records (null if none).
void append_app(std::string& out, const AppView& app, bool final, const std::string* cgroup_path);
void append_cgroup(std::string& out, std::string_view host, uint64_t id, const std::string* path);
void append_pair(std::string& out, const PairView& pair, const HostNames& names);
void append_clock(std::string& out, std::string_view host, const ClockEstimate& clock);
void append_alert(std::string& out, const Alert& alert);
void append_congestion(std::string& out, const CongestionEpisode& episode);

}  // namespace insert::correlate
