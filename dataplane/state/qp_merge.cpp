#include "dataplane/state/qp_merge.hpp"

#include <algorithm>
#include <tuple>

namespace insert::state {

namespace {

// A total order, so that picking the smallest is the same in any merge order.
auto transport_rank(const QpRecord& q) {
    return std::make_tuple(q.t_transport_ns, static_cast<int>(q.transport));
}
auto pair_rank(const QpRecord& q) {
    return std::make_tuple(q.peer_ip, q.peer_qpn, static_cast<int>(q.pair_by));
}

}  // namespace

void merge_qp(QpRecord& into, const QpRecord& other) {
    into.pkts += other.pkts;
    into.bytes += other.bytes;
    for (int i = 0; i < 5; ++i) into.msgs[i] += other.msgs[i];
    into.dup_pkts += other.dup_pkts;
    into.ooo_pkts += other.ooo_pkts;
    into.gaps += other.gaps;
    into.missing += other.missing;
    into.naks.seq += other.naks.seq;
    into.naks.rnr += other.naks.rnr;
    into.naks.inv += other.naks.inv;
    into.naks.access += other.naks.access;
    into.naks.op += other.naks.op;
    into.cnps += other.cnps;
    into.ecn_ce += other.ecn_ce;
    if (other.transport != TransportFamily::unknown &&
        (into.transport == TransportFamily::unknown ||
         transport_rank(other) < transport_rank(into))) {
        into.transport = other.transport;
        into.t_transport_ns = other.t_transport_ns;
    }
    if (other.pair_by != PairBy::none &&
        (into.pair_by == PairBy::none || pair_rank(other) < pair_rank(into))) {
        into.pair_by = other.pair_by;
        into.peer_ip = other.peer_ip;
        into.peer_qpn = other.peer_qpn;
    }
    into.t_first_ns = std::min(into.t_first_ns, other.t_first_ns);
    into.t_last_ns = std::max(into.t_last_ns, other.t_last_ns);
}

}  // namespace insert::state
