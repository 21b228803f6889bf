// Reads every input to its end and decodes it in parallel (oneTBB parallel_pipeline: one
// serial reader cutting the inputs into blocks of whole lines, parallel parsers, one
// serial collector in input order). Bad lines are counted; the first ones are kept, with
// their input and line number, for the message on stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "correlator/input/line_parser.hpp"
#include "correlator/input/records.hpp"

namespace insert::correlate {

struct IngestCounts {
    uint64_t lines = 0;
    uint64_t msg = 0;
    uint64_t qp = 0;
    uint64_t host = 0;  // host records used (verbs, process_exit, lost)
    uint64_t ignored = 0;
    uint64_t not_json = 0;
    uint64_t truncated = 0;
    uint64_t bad_field = 0;
    uint64_t unknown_type = 0;
    // Live streams: a line longer than --max-line, which ended its stream (a --listen
    // connection is closed then).
    uint64_t too_long = 0;
    uint64_t bytes = 0;

    void add(const IngestCounts& o);
    uint64_t bad() const { return not_json + truncated + bad_field + unknown_type + too_long; }
    uint64_t records() const { return msg + qp + host + ignored; }
};

struct BadLine {
    uint32_t input = 0;
    uint64_t line = 0;
    std::string reason;
};

struct Ingested {
    WireMsgs msgs;
    WireQps qps;
    HostEvents events;
    std::vector<CgroupName> cgroups;  // insert-trace's `cgroup` records
    std::vector<HostTick> ticks;      // insert-trace's `tick` records (live runs read them)
    IngestCounts counts;
    std::vector<IngestCounts> per_input;  // batch ingest(): by input, in the inputs' order
    std::vector<BadLine> first_bad;       // the first kMaxReported, in input order
};

inline constexpr std::size_t kMaxReported = 10;

// The size of the inputs that are regular files.
uint64_t regular_file_bytes(const std::vector<std::string>& inputs);

// `inputs`: paths, "-" for standard input. Returns false with `error` (naming the input)
// when one cannot be opened or read. `on_block`, if set, is called after each block is
// decoded (in input order, from one thread at a time) with the bytes and lines so far.
using IngestProgress = std::function<void(uint64_t bytes, uint64_t lines)>;
bool ingest(const std::vector<std::string>& inputs, HostNames& hosts, Ingested& out,
            std::string& error, const IngestProgress& on_block = {});

// Decodes whole lines of one block (shared with the live reader) into `records`' vectors,
// its counts and bad lines into `counts` and `bad` (at most kMaxReported). `data` must
// have SIMDJSON_PADDING readable bytes after `size`. `last_unterminated`: the block ends
// with an input's last line, which had no newline (a failure to parse it is `truncated`).
// Returns the lines walked, blank ones included: the next block's first line is
// first_line + that.
uint64_t parse_block(LineParser& parser, const char* data, std::size_t size, uint32_t input,
                     uint64_t first_line, bool last_unterminated, Ingested& records,
                     IngestCounts& counts, std::vector<BadLine>& bad);

}  // namespace insert::correlate
