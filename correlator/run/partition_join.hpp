// One partition's join in a correlator instance on the bus (docs/scale-out.md "Leases and
// takeover"): an instance holds each partition it owns as a join of its own - its live
// correlator, speaking for the partition's hosts only, fed every record that came on the
// partition - so that a partition can move between instances whole. Taken (at the start,
// or over from an instance that died or gave it back), its join is rebuilt from the
// partition's first message; the records its previous owners published to the output
// stream (their lines' hashes, read back when the lease was taken) are recognised as the
// rebuilt join decides them again, and neither published again nor told again (stderr,
// Alertmanager) - the output stream holds each record once.
//
// What a partition's join writes goes to the instance's --records (and --html, --http) as
// it is decided, and every record but the summary and cgroup names to the output stream's
// subject of the partition - except what it recognises as published before, which its
// previous owner wrote: the instances' --records files together hold each record once too.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "correlator/live/live_correlator.hpp"
#include "correlator/output/record_sink.hpp"
#include "correlator/run/partition_scope.hpp"
#include "correlator/run/run_options.hpp"

namespace insert::correlate {

class PartitionJoin {
  public:
    struct Counts {
        uint64_t published = 0;   // record lines handed to the output stream
        uint64_t recognised = 0;  // decided again, published before: not published again
    };

    // `settings`: the run's (its telling callbacks are muted while the join is catching up
    // on what was published before). `publish`: a whole line (with its newline) to the
    // output stream's subject of the partition; `observe`: every line the join writes.
    PartitionJoin(unsigned k, const BusOptions& bus, HostNames& names, LiveSettings settings,
                  OutputStream* out, std::function<void(std::string_view)> observe,
                  std::function<void(unsigned, std::string_view)> publish,
                  const std::vector<uint64_t>& published);

    unsigned partition() const { return k_; }
    LiveCorrelator& engine() { return engine_; }
    const LiveCorrelator& engine() const { return engine_; }
    RecordSink& sink() { return sink_; }
    // Decided records published before are still to come.
    bool catching_up() const { return !recognise_.empty(); }
    Counts counts() const { return counts_; }

  private:
    // A record line published before: neither written (--records, --html, --http) nor
    // published again.
    bool recognised(std::string_view line);
    void line(std::string_view line);
    LiveSettings mute_while_catching_up(LiveSettings settings);

    unsigned k_;
    std::function<void(std::string_view)> observe_;
    std::function<void(unsigned, std::string_view)> publish_;
    // The lines published before, by hash, with how many times each.
    std::unordered_map<uint64_t, uint32_t> recognise_;
    Counts counts_;
    PartitionScope scope_;
    RecordSink sink_;
    LiveCorrelator engine_;
    std::string buffer_;
};

// Sums `from` into `to` (an instance's summary over its partitions' joins).
void add_summary(SummaryCounts& to, const SummaryCounts& from);

}  // namespace insert::correlate
