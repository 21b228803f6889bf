// When a work request completed, for the application (docs/correlation.md 4): a signaled
// one at the first untaken send completion of its QP with its wr_id at or after its post;
// an unsignaled one only if it failed (its own error completion, taken the same way) -
// otherwise the application never sees its end, and the next signaled work request's
// completion only covers it (t_covered; a send queue completes in order). And on the
// responder, which receive completion delivered which SEND.
#pragma once

#include <cstdint>
#include <vector>

#include "correlator/join/host_model.hpp"

namespace insert::correlate {

// Sets t_poll / wc_status / t_covered of every work request of q.
void complete_work_requests(Incarnation& q);

// `sends`: the messages to responder q that consume a receive (SENDs, WRITEs with
// immediate data), in the join's message order. Returns, per entry of `sends`, the index
// (in q.recv_completions) of the receive completion that matched it, or -1.
std::vector<int64_t> match_receive_completions(const Incarnation& q,
                                               const std::vector<const WireMsg*>& sends);

}  // namespace insert::correlate
