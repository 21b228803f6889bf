#include "correlator/input/ingest.hpp"

#include <sys/stat.h>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "correlator/input/block_reader.hpp"
#include "correlator/input/parallelism.hpp"
#include "correlator/input/record_estimate.hpp"

namespace insert::correlate {

namespace {

// Concatenates the parsing threads' records: one allocation per kind, the copies in
// parallel. Each thread appends to its own vectors as it parses (blocks' own vectors,
// appended in the pipeline's serial stage, made that stage a quarter of the ingest, mostly
// page faults); the order of the records does not matter, as the join sorts them.
template <typename Vector>
void concatenate(Vector& into, std::vector<Ingested*>& parts, Vector Ingested::*member) {
    // One thread's records (or one non-empty part) are taken as they are: copying them
    // would fault in and fill as much memory again.
    std::size_t nonempty = 0;
    Ingested* only = nullptr;
    for (Ingested* part : parts)
        if (!(part->*member).empty()) {
            ++nonempty;
            only = part;
        }
    if (nonempty <= 1 && into.empty()) {
        if (only) into.swap(only->*member);
        return;
    }
    std::vector<std::size_t> offset(parts.size() + 1, 0);
    for (std::size_t i = 0; i < parts.size(); ++i)
        offset[i + 1] = offset[i] + (parts[i]->*member).size();
    into.resize(offset.back());
    tbb::parallel_for(std::size_t{0}, parts.size(), [&](std::size_t i) {
        Vector& part = parts[i]->*member;
        std::copy(part.begin(), part.end(), into.begin() + static_cast<long>(offset[i]));
        Vector().swap(part);
    });
}

}  // namespace

void IngestCounts::add(const IngestCounts& o) {
    lines += o.lines;
    msg += o.msg;
    qp += o.qp;
    host += o.host;
    ignored += o.ignored;
    not_json += o.not_json;
    truncated += o.truncated;
    bad_field += o.bad_field;
    unknown_type += o.unknown_type;
    too_long += o.too_long;
    bytes += o.bytes;
}

uint64_t parse_block(LineParser& parser, const char* data, std::size_t size, uint32_t input,
                     uint64_t first_line, bool last_unterminated, Ingested& out,
                     IngestCounts& counts, std::vector<BadLine>& bad) {
    const char* const end = data + size;
    const char* p = data;
    uint64_t line_no = first_line;
    WireMsg msg;
    WireQp qp;
    HostEvent event;
    std::string reason;
    while (p < end) {
        // Nearly every line is of the flat form, whose scan finds the line's end itself;
        // the others are cut at their newline first.
        const char* line_end = nullptr;
        LineKind kind = LineKind::blank;
        bool unterminated = false;
        if (!parser.parse_flat_line(p, end, line_end, kind, msg, qp, event, reason)) {
            const char* nl =
                static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
            unterminated = nl == nullptr;
            line_end = unterminated ? end : nl;
            const std::size_t len = static_cast<std::size_t>(line_end - p);
            // Everything after the line up to the buffer's padding is readable.
            const std::size_t capacity =
                static_cast<std::size_t>(end - p) + simdjson::SIMDJSON_PADDING;
            kind = parser.parse(p, len, capacity, msg, qp, event, reason);
        }
        ++counts.lines;
        switch (kind) {
            case LineKind::wire_msg:
                ++counts.msg;
                out.msgs.push_back(msg);
                break;
            case LineKind::wire_qp:
                ++counts.qp;
                out.qps.push_back(qp);
                break;
            case LineKind::host_event:
                ++counts.host;
                out.events.push_back(event);
                break;
            case LineKind::cgroup_name:
                ++counts.host;
                out.cgroups.push_back(parser.cgroup());
                break;
            case LineKind::tick:
                ++counts.host;
                out.ticks.push_back(parser.tick());
                break;
            case LineKind::ignored:
                ++counts.ignored;
                break;
            case LineKind::blank:
                --counts.lines;
                break;
            case LineKind::not_json:
            case LineKind::bad_field:
            case LineKind::unknown_type: {
                const bool cut = unterminated && last_unterminated && kind == LineKind::not_json;
                if (cut) {
                    ++counts.truncated;
                    reason = "truncated last line (no newline)";
                } else if (kind == LineKind::not_json) {
                    ++counts.not_json;
                } else if (kind == LineKind::bad_field) {
                    ++counts.bad_field;
                } else {
                    ++counts.unknown_type;
                }
                if (bad.size() < kMaxReported) bad.push_back({input, line_no, reason});
                break;
            }
        }
        ++line_no;
        p = line_end + 1;
    }
    return line_no - first_line;
}

uint64_t regular_file_bytes(const std::vector<std::string>& inputs) {
    uint64_t total = 0;
    for (const std::string& in : inputs) {
        struct stat st {};
        if (in != "-" && ::stat(in.c_str(), &st) == 0 && S_ISREG(st.st_mode))
            total += static_cast<uint64_t>(st.st_size);
    }
    return total;
}

bool ingest(const std::vector<std::string>& inputs, HostNames& hosts, Ingested& out,
            std::string& error, const IngestProgress& on_block) {
    BlockReader reader(inputs, error);
    // Room for every thread's records up front (record_estimate.hpp): a vector that grows
    // copies what it holds into fresh memory, whose first touch is a page fault - the
    // largest cost of ingesting where page faults are slow (virtual machines;
    // docs/performance.md, "Hugetlb pages and the VM's first touch"). With more threads than
    // one, each takes about its share of the blocks, and a quarter more is reserved for the
    // difference.
    const RecordEstimate estimate = estimate_records(inputs);
    const uint64_t threads = parallelism();
    const auto share = [threads](uint64_t n) {
        return static_cast<std::size_t>(threads == 1 ? n : n / threads + n / threads / 4);
    };
    tbb::enumerable_thread_specific<Ingested> records([&] {
        Ingested part;
        part.events.reserve(share(estimate.events));
        part.msgs.reserve(share(estimate.msgs));
        part.qps.reserve(share(estimate.qps));
        return part;
    });
    tbb::enumerable_thread_specific<LineParser> parsers([&] { return LineParser(hosts); });
    out.per_input.assign(inputs.size(), IngestCounts{});
    const std::size_t tokens = 2 * parallelism();
    uint32_t numbered_input = UINT32_MAX;
    uint64_t next_line = 1;
    uint64_t bytes_done = 0, lines_done = 0;
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, Block*>(tbb::filter_mode::serial_in_order,
                                       [&](tbb::flow_control& fc) -> Block* {
                                           Block* b = reader.next();
                                           if (!b) fc.stop();
                                           return b;
                                       }) &
            tbb::make_filter<Block*, Block*>(tbb::filter_mode::parallel,
                                             [&](Block* b) {
                                                 b->lines = parse_block(
                                                     parsers.local(), b->text, b->size, b->input, 1,
                                                     b->last_unterminated, records.local(),
                                                     b->counts, b->bad);
                                                 b->release();
                                                 return b;
                                             }) &
            tbb::make_filter<Block*, void>(tbb::filter_mode::serial_in_order, [&](Block* b) {
                // In input order: the first bad lines reported are the first in the input.
                // Blocks are numbered here, from the lines their parsers walked (counting
                // newlines as the blocks were read was a serial pass over every byte).
                std::unique_ptr<Block> owned(b);
                if (b->input != numbered_input) {
                    numbered_input = b->input;
                    next_line = 1;
                }
                out.counts.add(b->counts);
                out.per_input[b->input].add(b->counts);
                for (BadLine& bad : b->bad)
                    if (out.first_bad.size() < kMaxReported) {
                        bad.line += next_line - 1;
                        out.first_bad.push_back(std::move(bad));
                    }
                next_line += b->lines;
                bytes_done += b->size;
                lines_done += b->counts.lines;
                if (on_block) on_block(bytes_done, lines_done);
            }));
    std::vector<Ingested*> parts;
    for (Ingested& part : records) parts.push_back(&part);
    concatenate(out.msgs, parts, &Ingested::msgs);
    concatenate(out.qps, parts, &Ingested::qps);
    concatenate(out.events, parts, &Ingested::events);
    concatenate(out.cgroups, parts, &Ingested::cgroups);
    out.counts.bytes = reader.bytes();
    return error.empty() && reader.check_shrunk();
}

}  // namespace insert::correlate
