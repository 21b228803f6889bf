// Offences into alerts as they are found (docs/correlation.md 8): episodes of one kind,
// victim and source IP whose offences are less than --alert-gap apart, and rkey scans
// (--scan-threshold offences of one source within --scan-window). A batch run adds every
// offence and settles everything at once; a live run adds the offences of each window and
// settles the episodes that can no longer grow, so that both write the same alerts.
//
// An episode can no longer grow once no offence that could join it is still to come: the
// caller says up to which time offences of each kind are all in (`settle`). Until then its
// offences are held - only those of episodes still open, so memory follows the attacks in
// progress, not the run's length.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "correlator/usecases/security.hpp"

namespace insert::correlate {

class AlertTracker {
  public:
    // `track_opened`: keep what take_opened() returns (live runs; a batch run needs none).
    AlertTracker(const SecurityOptions& options, bool track_opened)
        : options_(options), track_opened_(track_opened) {}

    // An offence, found in any order among those not settled yet.
    void add(const Offence& o);

    // Every offence with `t` before `settled_ns` is in, and before `injected_settled_ns`
    // for injected_message (decided later than the others: it needs the join's verdict).
    // Returns the alerts whose episodes ended, their offences forgotten, sorted as
    // aggregate_alerts sorts.
    std::vector<Alert> settle(int64_t settled_ns, int64_t injected_settled_ns);

    // The evidence.origin of held offences that were added before it was known (their
    // origin_query): an episode that wants it is not settled before its first offence has
    // it (docs/correlation.md 8).
    void resolve_origins(const std::vector<std::pair<uint64_t, OriginEvidence>>& answers);

    // Alerts that came to exist since the last call - an episode's first offence, a scan
    // reaching its threshold - as they stand (their count so far): what a live run fires
    // at Alertmanager before the episode ends.
    std::vector<Alert> take_opened();

    std::size_t offences_held() const { return held_; }

  private:
    // (kind, victim address, victim QPN, victim incarnation, source address)
    using EpisodeKey =
        std::tuple<AlertKind, std::array<uint8_t, 16>, uint32_t, int64_t, std::array<uint8_t, 16>>;
    struct Held {
        std::vector<Offence> offences;
        int64_t newest = INT64_MIN;  // for telling a new episode when an offence is added
        bool fired = false;          // the newest episode was reported as opened
        bool scan_fired = false;     // rkey_scan: the newest episode reached its threshold
    };
    void settle_episodes(Held& held, int64_t settled_ns, std::vector<Alert>& out);
    void settle_scans(Held& held, int64_t settled_ns, std::vector<Alert>& out);
    void note_scan(Held& held, const Offence& o);

    SecurityOptions options_;
    bool track_opened_;
    std::map<EpisodeKey, Held> episodes_;
    std::map<std::array<uint8_t, 16>, Held> scans_;  // by source address
    std::vector<Alert> opened_;
    std::size_t held_ = 0;
};

}  // namespace insert::correlate
