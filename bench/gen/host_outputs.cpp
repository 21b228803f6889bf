#include "bench/gen/host_outputs.hpp"

#include <cstdio>
#include <optional>
#include <thread>

#include "bench/gen/alert_truth.hpp"
#include "bench/gen/congestion_truth.hpp"
#include "bench/gen/e2e_truth.hpp"
#include "bench/gen/e2e_truth_json.hpp"
#include "bench/gen/host_trace.hpp"
#include "bench/gen/host_trace_json.hpp"

namespace insert::gen {

HostOutputFailed write_host_outputs(const Generation& gen, const std::string& traces_path,
                                    const std::string& e2e_path, std::string& error,
                                    HostOutputStats& stats) {
    const HostTrace trace(gen.scenario(), gen.sim(), gen.seed());
    stats.records = trace.records().size();
    stats.lost = trace.records_lost();
    stats.reuse_overlaps = trace.reuse_overlaps();
    // The trace file is written while the e2e truth is worked out (both only read the
    // trace), on a thread of its own unless the run keeps to one thread (--threads 1).
    bool traces_ok = true;
    std::string traces_error;
    auto write_traces = [&] {
        if (!traces_path.empty())
            traces_ok =
                write_host_traces(gen.scenario(), gen.sim(), trace, traces_path, traces_error);
    };
    std::optional<E2eTruth> e2e;
    {
        std::jthread writer;
        if (gen.threaded())
            writer = std::jthread(write_traces);
        else
            write_traces();
        if (!e2e_path.empty()) e2e.emplace(gen.scenario(), trace, gen.msgs(), gen.truth());
    }
    if (!traces_ok) {
        error = traces_error;
        return HostOutputFailed::traces;
    }
    if (!e2e) return HostOutputFailed::nothing;
    // Sections 8 and 9 over the join: alerts and congestion episodes.
    const AlertTruth alerts(gen.scenario(), trace, *e2e);
    const CongestionTruth congestion(gen.scenario(), *e2e, gen.truth());
    const E2eSummary& s = e2e->summary();
    stats.e2e = s.e2e;
    stats.exact = s.exact;
    stats.resync = s.resync;
    stats.unmatched_wr = s.unmatched_wr;
    stats.wire_only = s.wire_only;
    stats.mispaired = e2e->mispaired();
    stats.indistinguishable = e2e->indistinguishable();
    stats.alerts = alerts.alerts().size();
    stats.episodes = congestion.episodes().size();
    if (!write_e2e_truth(gen.scenario(), trace, {*e2e, &alerts, &congestion}, e2e_path, error)) {
        if (!traces_path.empty()) std::remove(traces_path.c_str());
        return HostOutputFailed::e2e;
    }
    return HostOutputFailed::nothing;
}

}  // namespace insert::gen
