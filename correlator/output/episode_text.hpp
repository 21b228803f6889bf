// How a person reads an application's part in a congestion episode, shared by the terminal
// report, the live stderr lines and the Alertmanager annotations: latency per message
// (never a sum over messages, SPEC 10 v1.3) and shares of the episode's bytes.
#pragma once

#include <cstdint>
#include <string>

#include "correlator/usecases/congestion.hpp"

namespace insert::correlate {

// "850 ns", "42.3 us", "1.84 ms", "2.10 s": three significant digits or so.
std::string duration_text(int64_t ns);

// A victim: "+1.84 ms per message (p99 +3.20 ms) over its usual 45.1 us, 8 msgs" - or,
// with no messages of its own outside episodes, "+1.84 ms per message over the node's
// baseline"; then "; also sends 0.2% of the bytes".
std::string victim_effect(const CongestionEpisode& e, const EpisodeApp& victim);

// A contributor: "33.1% of the bytes (123456 B, 40 msgs)", "; also a victim" when it is.
std::string contributor_part(const EpisodeApp& contributor);

}  // namespace insert::correlate
