// A congestion record (SPEC 10 v1.3, docs/correlation.md 9) as people read it: who
// congested whom, by how much per message. Victims: the network latency added per message
// (`added_net_ns_mean`, `added_net_ns_p99`) and how many times their usual latency to that
// node it is; contributors: their share of the episode's bytes; an application that is
// both says so. A record of the earlier shape (a victim's `added_net_ns` summed over its
// messages) shows "-" where the per-message fields are missing: a sum over messages is
// not a latency and is never shown. Everything is appended as escaped HTML.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <vector>

namespace insert::correlate::report {

// "840 ns", "12.3 us", "1.84 ms", "2.10 s"; with `sign`, "+" before values >= 0.
std::string duration_text(double ns, bool sign = false);
// "4.1 kB", "12 B" (decimal units).
std::string bytes_text(double bytes);
// A fraction 0..1 as "31%", "6.2%" below 10%, "<0.1%" above 0; "-" when absent.
std::string share_text(std::optional<double> fraction);

// A number (integer or not) or none.
std::optional<double> number_field(simdjson::dom::element e, const char* key);

// The episode's victims and contributors as the record lists them (the most affected and
// the largest first).
std::vector<simdjson::dom::element> episode_victims(simdjson::dom::element episode);
std::vector<simdjson::dom::element> episode_contributors(simdjson::dom::element episode);

// "<b>name</b>: +1.84 ms per message (p99 +3.20 ms), 4.1x its usual 600 us, 20 messages; also
// contributes 31% of the bytes". Without a baseline of its own (no message to that node
// outside episodes) its latency per message, "added: -" and the node's baseline. An
// application in both lists
// says so: by the record's `contributor` / `victim` flag, else by being in the other list.
void append_victim(std::string& out, simdjson::dom::element victim, simdjson::dom::element episode);
// "<b>name</b>: 58% of the bytes (1.20 MB in 20 messages), also a victim".
void append_contributor(std::string& out, simdjson::dom::element contributor,
                        simdjson::dom::element episode);

// "toward hB (10.0.0.2) for 20.0 ms: p99 network latency 210 us (baseline 5.00 us)".
std::string episode_headline(simdjson::dom::element episode);

// How bad an episode is, to show the worst first: its largest added latency per message,
// else its p99 network latency.
double episode_weight(simdjson::dom::element episode);

}  // namespace insert::correlate::report
