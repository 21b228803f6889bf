#include "correlator/join/qp_index.hpp"

#include <algorithm>

namespace insert::correlate {

QpIndex::QpIndex(const HostModel& model) : model_(model) {
    for (uint32_t i = 0; i < model.qps.size(); ++i) {
        const Incarnation& q = model.qps[i];
        if (!q.has_ip) continue;
        by_endpoint_[{q.ip, q.qpn}].push_back(i);
        if (q.has_peer) by_peer_[{q.ip, q.peer_ip, q.dest_qpn}].push_back(i);
        host_by_ip_.try_emplace(q.ip, q.host);
    }
    const auto by_creation = [&](uint32_t a, uint32_t b) {
        return std::tie(model.qps[a].t_create, a) < std::tie(model.qps[b].t_create, b);
    };
    for (auto& [key, list] : by_endpoint_) std::sort(list.begin(), list.end(), by_creation);
    for (auto& [key, list] : by_peer_) std::sort(list.begin(), list.end(), by_creation);
}

const std::vector<uint32_t>& QpIndex::at_endpoint(const Ip& ip, uint32_t qpn) const {
    const auto it = by_endpoint_.find({ip, qpn});
    return it == by_endpoint_.end() ? empty_ : it->second;
}

const std::vector<uint32_t>& QpIndex::with_peer(const Ip& ip, const Ip& peer, uint32_t qpn) const {
    const auto it = by_peer_.find({ip, peer, qpn});
    return it == by_peer_.end() ? empty_ : it->second;
}

int64_t QpIndex::host_of(const Ip& ip) const {
    const auto it = host_by_ip_.find(ip);
    return it == host_by_ip_.end() ? int64_t{-1} : int64_t{it->second};
}

int64_t QpIndex::pick(const std::vector<uint32_t>& candidates, int64_t t) const {
    if (candidates.size() == 1) return candidates.front();  // no choice to make
    int64_t before = -1;
    for (uint32_t idx : candidates) {
        const Incarnation& q = model_.qps[idx];
        if (q.alive_at(t)) return idx;
        if (q.t_create <= t) before = idx;  // creation order: the last one wins
    }
    return before;
}

}  // namespace insert::correlate
