#include "correlator/usecases/origin.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace insert::correlate {

std::vector<std::string_view> differing(const OriginEvidence& e) {
    std::vector<std::string_view> names;
    if (e.mac_differs) names.emplace_back("src_mac");
    if (e.ttl_differs) names.emplace_back("ttl");
    if (e.port_differs) names.emplace_back("port");
    return names;
}

OriginEvidence compare_origin(const PacketOrigin& seen, const std::optional<PacketOrigin>& usual) {
    OriginEvidence e;
    e.seen = seen;
    e.usual = usual;
    if (seen.known && usual) {
        e.mac_differs = seen.mac != usual->mac;
        e.ttl_differs = seen.ttl != usual->ttl;
        e.port_differs = seen.port != usual->port;
    }
    return e;
}

OriginWords origin_words(const PacketOrigin& o) {
    OriginWords w;
    w.mac = mac_text(o.mac);
    w.ttl = o.ttl;
    if (o.port != kNoOriginPort) w.port = o.port;
    return w;
}

std::string origin_sentence(const OriginWords& seen, const std::optional<OriginWords>& usual,
                            const std::vector<std::string>& differs, std::string_view claimed_ip) {
    const bool ports = seen.port || (usual && usual->port);
    const auto port = [](const OriginWords& w) {
        return w.port ? fmt::format(", port {}", *w.port) : std::string(", no port");
    };
    std::string text = fmt::format("arrived with source MAC {}, TTL {}", seen.mac, seen.ttl);
    if (ports) text += port(seen);
    if (!usual) return text + fmt::format(" (no earlier packets of {} to compare)", claimed_ip);
    if (differs.empty()) return text + fmt::format(", as {}'s packets had", claimed_ip);
    text += fmt::format(" where {}'s packets had {}, TTL {}", claimed_ip, usual->mac, usual->ttl);
    if (ports) text += port(*usual);
    return text;
}

std::string origin_sentence(const OriginEvidence& e, std::string_view claimed_ip) {
    if (!e.seen.known) return {};
    std::optional<OriginWords> usual;
    if (e.usual) usual = origin_words(*e.usual);
    std::vector<std::string> differs;
    for (std::string_view name : differing(e)) differs.emplace_back(name);
    return origin_sentence(origin_words(e.seen), usual, differs, claimed_ip);
}

// ---- OriginBook -----------------------------------------------------------------------

void OriginBook::Tally::add(const PacketOrigin& o, int64_t t) {
    for (uint8_t i = 0; i < used; ++i) {
        Entry& e = entries[i];
        if (e.origin == o) {
            ++e.count;
            e.last = std::max(e.last, t);
            return;
        }
    }
    if (used < entries.size()) {
        entries[used++] = {o, 1, t};
        return;
    }
    // Full: the rarest (then the stalest) gives way - a spray of forged origins cannot
    // push out the address's own, which it outnumbers.
    Entry* victim = &entries[0];
    for (Entry& e : entries)
        if (std::tie(e.count, e.last) < std::tie(victim->count, victim->last)) victim = &e;
    *victim = {o, 1, t};
}

std::optional<PacketOrigin> OriginBook::Tally::most_common() const {
    if (used == 0) return std::nullopt;
    const Entry* best = &entries[0];
    for (uint8_t i = 1; i < used; ++i) {
        const Entry& e = entries[i];
        if (std::tie(e.count, e.last) > std::tie(best->count, best->last) ||
            (e.count == best->count && e.last == best->last && e.origin < best->origin))
            best = &e;
    }
    return best->origin;
}

void OriginBook::Seen::add(const OriginNote& n) {
    if (n.matched) matched.add(n.origin, n.t);
    all.add(n.origin, n.t);
    newest = std::max(newest, n.t);
    // A change of the answer from this message on. Steps stay in time order: a message
    // that comes after later ones (a late record) changes the answer from there on.
    const PacketOrigin now = *usual();
    const int64_t t = steps.empty() ? n.t : std::max(n.t, steps.back().t);
    if (!steps.empty() && steps.back().usual == now) return;
    if (!steps.empty() && steps.back().t == t)
        steps.back().usual = now;
    else
        steps.push_back({t, now});
    if (steps.size() > kSteps) steps.erase(steps.begin());
}

std::optional<PacketOrigin> OriginBook::Seen::usual() const {
    return matched.used ? matched.most_common() : all.most_common();
}

std::optional<PacketOrigin> OriginBook::Seen::usual_before(int64_t t) const {
    const auto after = std::lower_bound(steps.begin(), steps.end(), t,
                                        [](const Step& s, int64_t v) { return s.t < v; });
    if (after == steps.begin()) return std::nullopt;
    return std::prev(after)->usual;
}

void OriginBook::add(const OriginNote& n) {
    by_qp_[{n.src.bytes, n.dst.bytes, n.dst_qpn}].add(n);
    by_address_[n.src].add(n);
}

OriginEvidence OriginBook::evidence(const WireMsg& m) const {
    std::optional<PacketOrigin> usual;
    if (const auto it = by_qp_.find({m.src_ip.bytes, m.dst_ip.bytes, m.dst_qpn});
        it != by_qp_.end())
        usual = it->second.usual_before(m.t_first);
    if (!usual)
        if (const auto it = by_address_.find(m.src_ip); it != by_address_.end())
            usual = it->second.usual_before(m.t_first);
    return compare_origin(m.origin, usual);
}

void OriginBook::forget_before(int64_t t) {
    const auto trim = [t](Seen& seen) {
        // The last step before `t` still answers the times after it.
        const auto after = std::lower_bound(seen.steps.begin(), seen.steps.end(), t,
                                            [](const Step& s, int64_t v) { return s.t < v; });
        if (after - seen.steps.begin() > 1) seen.steps.erase(seen.steps.begin(), after - 1);
    };
    const auto old = [t](const auto& kv) { return kv.second.newest < t; };
    std::erase_if(by_qp_, old);
    std::erase_if(by_address_, old);
    for (auto& [key, seen] : by_qp_) trim(seen);
    for (auto& [key, seen] : by_address_) trim(seen);
}

// ---- OriginFeed -----------------------------------------------------------------------

uint64_t OriginFeed::add_query(const WireMsg& m) {
    const uint64_t id = next_query_++;
    waiting_[m.src_ip].queries.push_back({m.t_first, id, m});
    return id;
}

std::size_t OriginFeed::held() const {
    std::size_t n = 0;
    for (const auto& [ip, w] : waiting_) n += w.notes.size() + w.queries.size();
    return n;
}

void OriginFeed::advance_address(Waiting& w, int64_t limit,
                                 std::vector<std::pair<uint64_t, OriginEvidence>>& out) {
    std::sort(w.notes.begin(), w.notes.end());
    std::stable_sort(w.queries.begin(), w.queries.end(),
                     [](const Query& a, const Query& b) { return a.t < b.t; });
    std::size_t fed = 0, asked = 0;
    // A query at t needs every message before t, and none at or after it.
    for (; asked < w.queries.size() && w.queries[asked].t <= limit; ++asked) {
        const Query& q = w.queries[asked];
        while (fed < w.notes.size() && w.notes[fed].t < q.t) book_.add(w.notes[fed++]);
        out.emplace_back(q.id, book_.evidence(q.msg));
    }
    while (fed < w.notes.size() && w.notes[fed].t < limit) book_.add(w.notes[fed++]);
    w.notes.erase(w.notes.begin(), w.notes.begin() + static_cast<std::ptrdiff_t>(fed));
    w.queries.erase(w.queries.begin(), w.queries.begin() + static_cast<std::ptrdiff_t>(asked));
}

}  // namespace insert::correlate
