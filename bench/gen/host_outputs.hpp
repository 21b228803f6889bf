// The host traces and the e2e truth of a finished generation run (insert-gen --host-traces,
// --e2e-truth): built from what the run recorded (Generation::record_host_events() before
// it), then written.
#pragma once

#include <cstdint>
#include <string>

#include "bench/gen/generator.hpp"

namespace insert::gen {

struct HostOutputStats {
    uint64_t records = 0, lost = 0, reuse_overlaps = 0;
    uint64_t e2e = 0, exact = 0, resync = 0, unmatched_wr = 0, wire_only = 0;
    uint64_t mispaired = 0, indistinguishable = 0;
    uint64_t alerts = 0, episodes = 0;
};

// Either path may be empty (not written). Which file failed, with `error`; a failed file
// is removed.
enum class HostOutputFailed { nothing, traces, e2e };
HostOutputFailed write_host_outputs(const Generation& gen, const std::string& traces_path,
                                    const std::string& e2e_path, std::string& error,
                                    HostOutputStats& stats);

}  // namespace insert::gen
