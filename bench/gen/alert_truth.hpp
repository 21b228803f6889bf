// The exact `alert` records of a run with host traces: docs/correlation.md section 8
// applied to the deduplicated `msg` records, the host records (QP incarnations, MRs,
// losses) and the offsets of the e2e truth (e2e_truth.hpp). Like the e2e truth it shares
// no code with correlator/: a second reading of section 8. The generator's knowledge of
// which messages are attacks (attack_plan.hpp) is not used here; the tests check the result
// against it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bench/gen/e2e_truth.hpp"

namespace insert::gen {

// Section 8's kinds, in the order summary.alerts lists them.
enum class AlertKind : uint8_t {
    rkey_unknown,
    rkey_stale,
    out_of_bounds,
    access_denied,
    rkey_scan,
    unowned_qp,
    peer_mismatch,
    injected_message,
};
constexpr std::size_t kAlertKinds = 8;
const char* alert_kind_name(AlertKind k);
const char* alert_severity(AlertKind k);  // critical: rkey_scan, peer_mismatch, injected_message

constexpr uint32_t kNoIncarnation = UINT32_MAX;

// One message breaking one rule, with what the aggregation needs of it.
struct Offence {
    AlertKind kind = AlertKind::rkey_unknown;
    uint64_t t_ns = 0;       // the message's t_first_ns (observer clock)
    uint32_t msg = 0;        // index into E2eTruth::joined_msgs()
    uint16_t victim_ip = 0;  // the target's address (host index) and QPN
    uint32_t victim_qpn = 0;
    uint32_t victim_inc = kNoIncarnation;  // the target incarnation (none: unowned_qp)
    uint16_t src_ip = 0;
    std::optional<uint32_t> rkey;
    uint64_t pkts = 0;
    // Section 10 v1.3 source.claimed: false only when the source's own trace vouches for
    // the message (a post_send matched it); always true for peer_mismatch and
    // injected_message.
    bool claimed = true;
};

struct AlertOptions {
    uint64_t gap_ns = 1'000'000'000;          // --alert-gap 1 s
    uint64_t scan_window_ns = 1'000'000'000;  // --scan-window 1 s
    uint32_t scan_threshold = 8;              // --scan-threshold 8
};

// One `alert` record before formatting: victim and source, evidence's op rkey va length
// psn_first status, come from the offence `first` (and its message).
struct AlertRecord {
    AlertKind kind = AlertKind::rkey_unknown;
    uint64_t t_ns = 0, t_last_ns = 0;
    uint64_t count = 0;
    Offence first;
    uint64_t pkts = 0;            // summed over the offences
    std::vector<uint32_t> rkeys;  // distinct, in order of appearance, the first 16
    uint64_t distinct_rkeys = 0;
    uint64_t victims = 0;  // distinct target QPs (rkey_scan; 1 otherwise)
    bool claimed = false;  // any of its offences' source only claimed
};

// Section 8 "Alerts" and `rkey_scan`: offences aggregated per (kind, victim, source IP)
// and rkey scans per source IP, sorted by (t_ns, kind) - the caller orders ties further.
std::vector<AlertRecord> aggregate_alerts(std::span<const Offence> offences,
                                          const AlertOptions& opt = {});

class AlertTruth {
  public:
    AlertTruth(const Scenario& sc, const HostTrace& trace, const E2eTruth& e2e,
               const AlertOptions& opt = {});

    const std::vector<Offence>& offences() const { return offences_; }
    // Sorted by (t_ns, kind, victim address, QPN, source address) (section 8 "Records").
    const std::vector<AlertRecord>& alerts() const { return alerts_; }
    std::array<uint64_t, kAlertKinds> counts() const;

  private:
    // An MR's life (section 2): reg_mr until its dereg_mr or its process's exit.
    struct MrLife {
        uint64_t ptr = 0, pd = 0, addr = 0, length = 0;
        uint32_t access = 0, rkey = 0;
        int64_t t_reg = 0, t_end = INT64_MAX;
    };
    void read_trace();
    void check(uint32_t k);
    std::optional<uint32_t> live_target(const TruthMsg& m) const;
    std::optional<AlertKind> rkey_offence(const TruthMsg& m, const Incarnation& target) const;
    bool lost_near(uint16_t host, int64_t t) const;

    const Scenario& sc_;
    const HostTrace& trace_;
    const E2eTruth& e2e_;
    std::vector<std::vector<MrLife>> mrs_;    // by process (trace model numbering)
    std::vector<int64_t> first_record_;       // per host: its earliest record (host clock)
    std::vector<std::vector<int64_t>> lost_;  // per host: wall_ns of its `lost` records
    std::vector<Offence> offences_;
    std::vector<AlertRecord> alerts_;
};

}  // namespace insert::gen
