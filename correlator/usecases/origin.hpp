// evidence.origin (SPEC 10 v1.3, docs/correlation.md 8): where the packet of a
// peer_mismatch or injected_message really came from. A message names its source by an
// address the sender writes itself; the observer knows more - the opening packet's source
// MAC, TTL / hop limit and ingress port (insert-dp's `msg` src_mac, ttl, port) - and what
// the claimed address's earlier messages carried. A spoofer on another host sends with its
// own MAC, usually from another port or at another hop count.
//
// "Usual" is the most common origin among the claimed address's earlier messages (t_first
// before the offence's) to the same QP - those its process posted (matched by the join) if
// any, else all - or, without any to that QP, among its earlier messages to any QP, the
// same way. Kept as tallies of at most kValues distinct origins per address and per
// (address, QP), fed in data time order, so that a live run holds a few values per
// address it saw within --ttl and answers as a batch run does.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "correlator/input/records.hpp"
#include "correlator/join/correlation.hpp"
#include "correlator/join/qp_index.hpp"
#include "correlator/usecases/security_rules.hpp"

namespace insert::correlate {

// The kinds whose source is only an address the packet claims (SPEC 10 v1.3): their
// evidence says where the packet came from.
constexpr bool wants_origin(AlertKind k) {
    return k == AlertKind::peer_mismatch || k == AlertKind::injected_message;
}

struct OriginEvidence {
    PacketOrigin seen;                  // the offending message's (!known: evidence null)
    std::optional<PacketOrigin> usual;  // none: no earlier message of the address
    bool mac_differs = false, ttl_differs = false, port_differs = false;
};

// The names of `differs` in the record: "src_mac", "ttl", "port", in that order.
std::vector<std::string_view> differing(const OriginEvidence& e);

// The evidence for message `m` given what `usual` its address's earlier messages carried.
OriginEvidence compare_origin(const PacketOrigin& seen, const std::optional<PacketOrigin>& usual);

// The sentence people read (terminal, Alertmanager, the page), from the record's values:
// "arrived with source MAC 02:..:05, TTL 63 where 10.88.0.1's packets had 02:..:01, TTL 64".
// Ports appear when either side has one. `usual_*` empty/absent when there is no usual.
struct OriginWords {
    std::string mac;
    int64_t ttl = 0;
    std::optional<int64_t> port;
};
std::string origin_sentence(const OriginWords& seen, const std::optional<OriginWords>& usual,
                            const std::vector<std::string>& differs, std::string_view claimed_ip);
OriginWords origin_words(const PacketOrigin& o);
// The same from the evidence; empty when the message's origin is unknown.
std::string origin_sentence(const OriginEvidence& e, std::string_view claimed_ip);

// One decided message as the book needs it.
struct OriginNote {
    Ip src;
    Ip dst;
    uint32_t dst_qpn = 0;
    uint32_t psn_first = 0;
    int64_t t = 0;  // t_first
    PacketOrigin origin;
    bool matched = false;  // its process posted it (the join matched it)
    static OriginNote of(const WireMsg& m, bool matched) {
        return {m.src_ip, m.dst_ip, m.dst_qpn, m.psn_first, m.t_first, m.origin, matched};
    }
    // Data time order, ties broken by everything else (so that every run feeds alike).
    friend bool operator<(const OriginNote& a, const OriginNote& b) {
        return std::tie(a.t, a.dst.bytes, a.dst_qpn, a.psn_first, a.origin, a.matched) <
               std::tie(b.t, b.dst.bytes, b.dst_qpn, b.psn_first, b.origin, b.matched);
    }
};

// Tallies of the origins an address's messages carried (docs/correlation.md 8), and what
// their answer was over time: an offence whose record comes late (insert-dp writes a
// request nobody answered when it gives up on it) is answered as of its own time.
class OriginBook {
  public:
    static constexpr std::size_t kValues = 4;  // distinct origins kept per tally
    static constexpr std::size_t kSteps = 16;  // changes of the answer kept per tally

    // A decided message (its origin known), in data time order.
    void add(const OriginNote& n);
    // What the messages added before `m` (t_first) say about an offence by it.
    OriginEvidence evidence(const WireMsg& m) const;
    // Live: forgets the tallies whose newest message is before `t` (--ttl behind), and the
    // changes of the others' answers before the last one before `t`.
    void forget_before(int64_t t);
    std::size_t tallies() const { return by_qp_.size() + by_address_.size(); }

  private:
    struct Entry {
        PacketOrigin origin;
        uint64_t count = 0;
        int64_t last = INT64_MIN;  // newest t_first with it
    };
    // The most common origin; a tie goes to the one seen last, then to the lower value.
    struct Tally {
        std::array<Entry, kValues> entries{};
        uint8_t used = 0;
        void add(const PacketOrigin& o, int64_t t);
        std::optional<PacketOrigin> most_common() const;
    };
    // The answer from the messages up to `t` on (until the next step).
    struct Step {
        int64_t t = 0;
        PacketOrigin usual;
    };
    struct Seen {
        Tally matched;  // messages its process posted
        Tally all;
        int64_t newest = INT64_MIN;
        std::vector<Step> steps;  // in time order
        void add(const OriginNote& n);
        std::optional<PacketOrigin> usual() const;  // matched ones if any, else all
        // The answer from the messages before `t`.
        std::optional<PacketOrigin> usual_before(int64_t t) const;
    };
    using QpKey = std::tuple<std::array<uint8_t, 16>, std::array<uint8_t, 16>, uint32_t>;
    std::map<QpKey, Seen> by_qp_;
    std::unordered_map<Ip, Seen, IpHash> by_address_;
};

// An OriginBook fed in data time order while messages are decided in any order, and the
// offences' questions answered once every earlier message of their address is in.
class OriginFeed {
  public:
    // A decided message whose origin is known.
    void add_message(const OriginNote& n) { waiting_[n.src].notes.push_back(n); }
    // An offence by `m` (its origin known) that needs its evidence; returns its number.
    uint64_t add_query(const WireMsg& m);
    // Every message from an address with t_first before `limit(address)` is decided and
    // added: those go to the book in time order, and each query of that address whose time
    // is at most the limit is answered on the way. Returns (query number, evidence).
    template <class Limit>
    std::vector<std::pair<uint64_t, OriginEvidence>> advance(Limit limit);
    OriginBook& book() { return book_; }
    std::size_t held() const;  // messages and queries waiting

  private:
    struct Query {
        int64_t t = 0;
        uint64_t id = 0;
        WireMsg msg;
    };
    struct Waiting {
        std::vector<OriginNote> notes;
        std::vector<Query> queries;
    };
    void advance_address(Waiting& w, int64_t limit,
                         std::vector<std::pair<uint64_t, OriginEvidence>>& out);

    OriginBook book_;
    std::unordered_map<Ip, Waiting, IpHash> waiting_;
    uint64_t next_query_ = 1;
};

template <class Limit>
std::vector<std::pair<uint64_t, OriginEvidence>> OriginFeed::advance(Limit limit) {
    std::vector<std::pair<uint64_t, OriginEvidence>> out;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
        advance_address(it->second, limit(it->first), out);
        const bool empty = it->second.notes.empty() && it->second.queries.empty();
        it = empty ? waiting_.erase(it) : std::next(it);
    }
    // The order of the addresses is the hash table's: answers are set on offences by
    // number, so it does not show.
    return out;
}

}  // namespace insert::correlate
