#include "dataplane/pipeline/mbuf_timestamp.hpp"

#include <rte_errno.h>

namespace insert::pipeline {

bool MbufTimestamp::register_field(std::string& error) {
    if (rte_mbuf_dyn_rx_timestamp_register(&offset, &rx_flag) != 0) {
        error = std::string("cannot register the mbuf timestamp field: ") + rte_strerror(rte_errno);
        return false;
    }
    return true;
}

}  // namespace insert::pipeline
