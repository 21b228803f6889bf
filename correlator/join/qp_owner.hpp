// The owner of a QP as alerts and congestion episodes name it: copied out of the host
// model, since they outlive the live join's windows.
#pragma once

#include <cstdint>
#include <string>

#include "correlator/input/host_names.hpp"
#include "correlator/join/host_model.hpp"

namespace insert::correlate {

struct QpOwner {
    bool traced = false;
    std::string host;
    int32_t pid = 0;
    Comm comm;
    uint64_t cgroup = 0;
};

inline QpOwner qp_owner(const Incarnation& q, const HostNames& names) {
    return {true, names.name(q.host), q.pid, q.comm, q.cgroup};
}

}  // namespace insert::correlate
