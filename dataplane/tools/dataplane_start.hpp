// Start-up shared by every insert-dp command that runs the DPDK pipeline: the EAL, then
// the mbuf timestamp dynfield the workers read. One place, so replay and the live modes
// cannot drift apart.
#pragma once

#include <string>

#include "dataplane/pipeline/eal_session.hpp"
#include "dataplane/pipeline/mbuf_timestamp.hpp"

namespace insert::tools {

// False and `error` (one line) if either step fails; `eal` stops itself when destroyed.
inline bool start_dataplane(const pipeline::EalRequest& request, pipeline::EalSession& eal,
                            pipeline::MbufTimestamp& timestamp, std::string& error) {
    return eal.start(request, error) && timestamp.register_field(error);
}

}  // namespace insert::tools
