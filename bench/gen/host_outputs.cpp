#include "bench/gen/host_outputs.hpp"

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
    if (!traces_path.empty() &&
        !write_host_traces(gen.scenario(), gen.sim(), trace, traces_path, error))
        return HostOutputFailed::traces;
    if (e2e_path.empty()) return HostOutputFailed::nothing;
    const E2eTruth e2e(gen.scenario(), trace, gen.msgs(), gen.truth());
    const E2eSummary& s = e2e.summary();
    stats.e2e = s.e2e;
    stats.exact = s.exact;
    stats.resync = s.resync;
    stats.unmatched_wr = s.unmatched_wr;
    stats.wire_only = s.wire_only;
    stats.mispaired = e2e.mispaired();
    stats.indistinguishable = e2e.indistinguishable();
    if (!write_e2e_truth(gen.scenario(), trace, e2e, e2e_path, error)) {
        if (!traces_path.empty()) std::remove(traces_path.c_str());
        return HostOutputFailed::e2e;
    }
    return HostOutputFailed::nothing;
}

}  // namespace insert::gen
