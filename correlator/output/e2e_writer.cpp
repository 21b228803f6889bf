#include "correlator/output/e2e_writer.hpp"

#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "correlator/input/parallelism.hpp"
#include "correlator/output/record_writer.hpp"

namespace insert::correlate {

namespace {

// Rows per chunk: a parallel stage's work well above its hand-off, ~1 MB of text.
constexpr std::size_t kChunkRows = 2048;
constexpr std::size_t kRowBytes = 768;  // an e2e line is ~600-700 bytes

struct Chunk {
    std::size_t begin = 0, end = 0;  // of the matches
    std::vector<E2eRow> rows;
    std::string text;
};

}  // namespace

void write_e2e(const JoinResult& joined, const HostModel& model, const WireMsgs& msgs,
               const HostNames& names, AppAggregator& apps, RecordSink& sink) {
    const std::vector<E2eMatch>& matches = joined.matches;
    const std::size_t threads = parallelism();
    if (threads == 1) {
        // One thread: straight into the sink. The chunks' own text and the copy of it
        // made a one-thread run ~10% slower (benchmark, alternated runs).
        for (std::size_t i = 0; i < matches.size(); ++i) {
            if (i + kRowsAhead < matches.size())
                prefetch_e2e_row(joined, model, msgs, matches[i + kRowsAhead]);
            const E2eRow row = make_e2e_row(joined, model, msgs, matches[i]);
            apps.add_row(row, names);
            sink.e2e(row, names);
        }
        return;
    }
    const bool format = sink.wants_records();
    std::size_t next = 0;
    const std::size_t tokens = 2 * threads;
    tbb::parallel_pipeline(
        tokens,
        tbb::make_filter<void, Chunk*>(tbb::filter_mode::serial_in_order,
                                       [&](tbb::flow_control& fc) -> Chunk* {
                                           if (next >= matches.size()) {
                                               fc.stop();
                                               return nullptr;
                                           }
                                           auto* c = new Chunk;
                                           c->begin = next;
                                           c->end = std::min(next + kChunkRows, matches.size());
                                           next = c->end;
                                           return c;
                                       }) &
            tbb::make_filter<Chunk*, Chunk*>(
                tbb::filter_mode::parallel,
                [&](Chunk* c) {
                    // The matches are in t_first order, which reaches the messages and work
                    // requests at random: rows are prefetched ahead (views.hpp).
                    c->rows.reserve(c->end - c->begin);
                    if (format) c->text.reserve((c->end - c->begin) * kRowBytes);
                    for (std::size_t i = c->begin; i < c->end; ++i) {
                        if (i + kRowsAhead < c->end)
                            prefetch_e2e_row(joined, model, msgs, matches[i + kRowsAhead]);
                        c->rows.push_back(make_e2e_row(joined, model, msgs, matches[i]));
                        if (format) append_e2e(c->text, c->rows.back(), names);
                    }
                    return c;
                }) &
            tbb::make_filter<Chunk*, void>(tbb::filter_mode::serial_in_order, [&](Chunk* c) {
                std::unique_ptr<Chunk> owned(c);
                for (const E2eRow& row : c->rows) apps.add_row(row, names);
                sink.lines(c->text);
            }));
}

}  // namespace insert::correlate
