// What the bus's producers (nats_publisher) and consumers (nats_consumer) agree on without
// talking (docs/scale-out.md "Subjects and the stream"): the subject prefix's form, the
// subjects of the partitions, the stream's description that records the deployment's
// partition count, and how both sides wait for a bus that is away (0.1 s doubling to 2 s).
// Plain C++: included by the libnats sources of insert_nats, whose headers need no libnats.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace insert::nats_client {

// Reconnection (the client library's) and every look-up that failed: 0.1 s doubling to 2 s.
inline constexpr int64_t kFirstBackoffMs = 100;
inline constexpr int64_t kMaxBackoffMs = 2000;
// The wait before attempt `attempts` (1, 2, ...).
int64_t backoff_ms(int attempts);

// The prefix is one subject token that is also the stream's name.
bool valid_prefix(std::string_view prefix);
// PREFIX.part.K
std::string partition_subject(std::string_view prefix, unsigned partition);

// The stream's description, made by the producer that creates it: "INSERT records by
// host: N partitions (docs/scale-out.md)".
std::string stream_description(unsigned partitions);
// The partition count a description names; 0 when it names none (a stream made by hand).
unsigned described_partitions(std::string_view description);

// "0-3,5": partitions (ascending), runs of consecutive ones as ranges - as --partitions
// takes them and the logs name them.
std::string partition_list(const std::vector<unsigned>& parts);

// Whether the subject pattern `pattern` (tokens, `*` one, `>` the rest) matches `subject`.
bool subject_matches(std::string_view pattern, std::string_view subject);

}  // namespace insert::nats_client
