#include "dataplane/pipeline/resident_memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dataplane/common/log.hpp"

RTE_LOG_REGISTER(insert_logtype_pipeline, insert.pipeline, INFO);

namespace insert::pipeline {

// The tables are reserved lazily (state/lazy_array.hpp), and without the lock the first
// frame of each new connection on a live link waits for the kernel to fault in and zero a
// 2 MiB page of the index or endpoint table (3-5 ms each on a busy VM: the p99 latency
// measured over veth). Locked, they are populated once, at creation, as an appliance's
// state should be; the cost is start-up time and resident memory for the whole capacity
// (--max-endpoints). Memory mapped before (EAL's, the mbuf pools) is left as it is.
bool lock_future_memory() {
    rlimit limit{};
    // Without CAP_IPC_LOCK a finite RLIMIT_MEMLOCK would make the table mappings fail.
    const bool allowed = geteuid() == 0 || (getrlimit(RLIMIT_MEMLOCK, &limit) == 0 &&
                                            limit.rlim_cur == RLIM_INFINITY);
    if (allowed && mlockall(MCL_FUTURE) == 0) return true;
    INSERT_LOG(WARNING, pipeline,
               "warning: memory not locked (%s): the first frames of new connections may wait "
               "for page faults (run as root or with ulimit -l unlimited)",
               allowed ? std::strerror(errno) : "not root, ulimit -l is finite");
    return false;
}

}  // namespace insert::pipeline
