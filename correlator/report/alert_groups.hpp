// "Who attacked whom": the run's alerts grouped as they come by kind, victim process and
// source (docs/correlation.md 10, the verdict). A victim process's QPs and a source's QPs
// are one group: a scan over six QPs of one target reads as one line, not six. The groups
// are bounded (a hostile records file may name a new victim in every line); alerts beyond
// them are still counted by kind.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace insert::correlate::report {

struct AlertGroup {
    std::string kind;
    std::string severity;
    std::string victim;                 // comm[pid]@host ip, or the ip when no process owns it
    bool victim_traced = false;         // a process owns the victim QP
    std::vector<uint64_t> victim_qpns;  // the first kShownQpns, in order of arrival
    uint64_t more_qpns = 0;             // further QPNs (counted with repeats)
    std::string source;                 // comm[pid]@host ip, or the ip when untraced
    bool claimed = false;               // source.claimed: the address may be another's
    // evidence.origin in words (docs/correlation.md 8): of its first alert whose origin
    // differs from the claimed address's usual one, else of its first with an origin.
    std::string origin;
    bool origin_differs = false;
    uint64_t alerts = 0;
    uint64_t offences = 0;  // sum of the alerts' counts
    std::optional<int64_t> t_first_ns;

    static constexpr std::size_t kShownQpns = 3;
};

class AlertGroups {
  public:
    explicit AlertGroups(std::size_t max_groups = 1000, std::size_t max_kinds = 64)
        : max_groups_(max_groups), max_kinds_(max_kinds) {}

    void add(simdjson::dom::element alert);

    // Critical groups first, then warnings, then the rest; within each by first time.
    std::vector<const AlertGroup*> ordered() const;
    // Alerts per kind: the known kinds in their order (docs/correlation.md 8), others after.
    std::vector<std::pair<std::string, uint64_t>> kinds() const;
    // Distinct victims (process, or address for unowned QPs) of the groups.
    std::vector<std::string> victims() const;

    uint64_t alerts() const { return alerts_; }
    uint64_t critical() const { return critical_; }
    uint64_t ungrouped() const { return ungrouped_; }  // alerts beyond max_groups

  private:
    std::size_t max_groups_;
    std::size_t max_kinds_;
    std::vector<AlertGroup> groups_;
    std::map<std::string, std::size_t> by_key_;
    std::map<std::string, uint64_t> by_kind_;
    uint64_t alerts_ = 0;
    uint64_t critical_ = 0;
    uint64_t ungrouped_ = 0;
};

// An application as people name it: comm[pid]@host ip; only the ip when the record names
// no process (an untraced address). From an alert's victim or source, or a congestion
// record's victim or contributor.
std::string party_name(simdjson::dom::element party);

}  // namespace insert::correlate::report
