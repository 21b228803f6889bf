#include "dataplane/export/record_finaliser.hpp"

#include <algorithm>

#include "dataplane/state/qp_merge.hpp"

namespace insert::exporter {

using state::QpRecord;
using state::Record;
using state::RecordType;
using state::TransportFamily;

void merge_final_qp(QpRecord& into, const QpRecord& other) {
    state::merge_qp(into, other);
}

void fill_latency(QpRecord& q, const LatencyHistogram* h) {
    q.lat_count = h ? h->count() : 0;
    if (h && h->count() > 0) {
        q.lat_p50_ns = h->percentile(50);
        q.lat_p99_ns = h->percentile(99);
        q.lat_max_ns = h->max();
    }
}

namespace {

// The latencies of every part of `endpoint` in the book: the one part's own histogram
// (nearly always), else their merge in `scratch`.
const LatencyHistogram* endpoint_latency(const EndpointBook& book, const EndpointKey& endpoint,
                                         LatencyHistogram& scratch) {
    const uint32_t first = book.first_part(endpoint);
    if (first == EndpointBook::kNone) return nullptr;
    const EndpointBook::Entry& e = book.entry_at(first);
    if (e.next == EndpointBook::kNone) return &e.latency;
    scratch = LatencyHistogram{};
    for (uint32_t i = first; i != EndpointBook::kNone; i = book.entry_at(i).next)
        scratch.merge(book.entry_at(i).latency);
    return &scratch;
}

// Final records fill their latencies from their book entries, which are in arrival order,
// not address order: the slot is fetched 2 x kFinalsAhead ahead, the entry kFinalsAhead.
constexpr uint32_t kFinalsAhead = 8;

}  // namespace

void RecordFinaliser::fill_endpoint_latency(QpRecord& q) const {
    LatencyHistogram scratch;
    fill_latency(q, endpoint_latency(book_, {q.ip, q.qpn}, scratch));
}

bool RecordFinaliser::take(Record& r) {
    // Latencies are kept per part (the msg's source): a part's messages and its own records
    // come from one worker, in order, so what an evicted part reports does not depend on
    // the worker count.
    if (r.type == RecordType::msg && r.msg.has_ack)
        book_.part({r.msg.dst_ip, r.msg.dst_qpn}, r.msg.src_ip)
            .latency.add(r.msg.t_ack_ns - r.msg.t_first_ns);
    if (r.type != RecordType::qp) return true;
    QpRecord& q = r.qp;
    const EndpointKey key{q.ip, q.qpn};
    if (q.final && !q.evicted) {
        uint32_t& held = book_.final_record(key);
        if (held == EndpointBook::kNoFinal) {
            held = finals_.size();
            finals_.emplace_back() = r;
            final_keys_.push_back(key);
        } else {
            merge_final_qp(finals_[held].qp, q);
        }
        return false;
    }
    if (q.evicted && !bounded_memory_) evicted_seen_.insert(key);
    if (q.evicted && q.endpoint_gone) ++endpoints_gone_;
    if (q.evicted && split_tick_ns_ != 0 && q.transport == TransportFamily::ud) {
        held_evictions_.push_back(r);
        return false;
    }
    if (q.evicted) {
        // One part went idle: its messages' latencies, then they go with it.
        const EndpointBook::Entry* e = book_.find_part(key, q.src_ip);
        fill_latency(q, e ? &e->latency : nullptr);
        book_.erase_part(key, q.src_ip);
        return true;
    }
    fill_endpoint_latency(q);
    return true;
}

void RecordFinaliser::join_held_evictions(const Emit& emit) {
    // One engine keeps an endpoint alive across a quiet spell unless an eviction tick falls
    // more than the timeout after its last packet and no later than its next one.
    const auto one_incarnation = [this](uint64_t last_ns, uint64_t next_first_ns) {
        if (next_first_ns <= last_ns) return true;
        const uint64_t first_evicting_tick =
            ((last_ns + split_timeout_ns_) / split_tick_ns_ + 1) * split_tick_ns_;
        return first_evicting_tick > next_first_ns;
    };
    const auto key_of = [](const Record& r) { return EndpointKey{r.qp.ip, r.qp.qpn}; };
    std::sort(held_evictions_.begin(), held_evictions_.end(),
              [&](const Record& a, const Record& b) {
                  const EndpointKey ka = key_of(a), kb = key_of(b);
                  if (!(ka == kb)) return ka.ip < kb.ip || (ka.ip == kb.ip && ka.qpn < kb.qpn);
                  return a.qp.t_first_ns < b.qp.t_first_ns;
              });
    std::vector<Record*> parts;
    for (std::size_t i = 0; i < held_evictions_.size();) {
        const EndpointKey key = key_of(held_evictions_[i]);
        parts.clear();
        for (; i < held_evictions_.size() && key_of(held_evictions_[i]) == key; ++i)
            parts.push_back(&held_evictions_[i]);
        // The part still alive at the end of input, if any, joins the sweep in time order;
        // whatever it joins with ends up in its held final record.
        Record* final_part = nullptr;
        if (const uint32_t held = book_.final_record_of(key); held != EndpointBook::kNoFinal) {
            final_part = &finals_[held];
            parts.insert(std::upper_bound(parts.begin(), parts.end(), final_part,
                                          [](const Record* x, const Record* y) {
                                              return x->qp.t_first_ns < y->qp.t_first_ns;
                                          }),
                         final_part);
        }
        for (std::size_t j = 0; j < parts.size();) {
            Record group = *parts[j];
            bool has_final = parts[j] == final_part;
            for (++j;
                 j < parts.size() && one_incarnation(group.qp.t_last_ns, parts[j]->qp.t_first_ns);
                 ++j) {
                merge_final_qp(group.qp, parts[j]->qp);
                has_final = has_final || parts[j] == final_part;
            }
            if (has_final) {
                group.qp.evicted = false;
                *final_part = group;
            } else {
                fill_endpoint_latency(group.qp);
                emit(group);
            }
        }
    }
    held_evictions_.clear();
}

const Record& RecordFinaliser::final_record(uint32_t i, LatencyHistogram& scratch) {
    const uint32_t n = finals_.size();
    if (i + 2 * kFinalsAhead < n) book_.prefetch(final_keys_[i + 2 * kFinalsAhead]);
    if (i + kFinalsAhead < n) book_.prefetch_entry(final_keys_[i + kFinalsAhead]);
    fill_latency(finals_[i].qp, endpoint_latency(book_, final_keys_[i], scratch));
    return finals_[i];
}

uint64_t RecordFinaliser::summary_endpoints() const {
    if (bounded_memory_) return finals_.size() + endpoints_gone_;
    uint64_t distinct = finals_.size();
    for (const EndpointKey& k : evicted_seen_)
        if (book_.final_record_of(k) == EndpointBook::kNoFinal) ++distinct;
    return distinct;
}

void RecordFinaliser::clear_finals() {
    for (const EndpointKey& k : final_keys_) book_.final_record(k) = EndpointBook::kNoFinal;
    finals_.clear();
    final_keys_.clear();
}

}  // namespace insert::exporter
