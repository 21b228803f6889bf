// insert-report --nats: the merged view of a scaled-out deployment (docs/scale-out.md "The
// merged view"). The correlator instances publish every record their partitions' joins
// decide once to the output stream PREFIX-out; this reads all of it once - every
// partition, from the first message to the last one there when it started - and hands
// each message's record lines to the report, as a records file's lines would be.
//
// A message is checked as the correlator checks its inputs' (the format of
// docs/scale-out.md "Messages"): one that is not such a batch of whole lines is skipped,
// counted, and said (the first few, then the count).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace insert::correlate {

struct ReportBusOptions {
    std::string url;  // nats://HOST:PORT[,nats://HOST:PORT...]
    std::string subject = "insert";
    double wait_s = 10;  // the bus unreachable: given up after this long
};

struct ReportBusCounts {
    uint64_t messages = 0;   // read from the stream
    uint64_t malformed = 0;  // skipped
    uint64_t lines = 0;      // handed over
};

// What is wrong with a message of the output stream (its header by name, its body), or
// empty when it is a batch of record lines as the correlator publishes them.
std::string malformed_message(
    const std::function<std::optional<std::string_view>(const char*)>& header,
    std::string_view body);

// The output stream's record lines (without their newlines) to `line`. Exit code 0, or 1
// with `error` (one line, without the program's name): the bus unreachable within the wait,
// no output stream, the bus lost while reading. `label` starts the lines said on stderr.
int read_output_stream(const ReportBusOptions& options, const std::string& label,
                       const std::function<void(std::string_view)>& line, ReportBusCounts& counts,
                       std::string& error);

}  // namespace insert::correlate
