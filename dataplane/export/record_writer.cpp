#include "dataplane/export/record_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

#include "dataplane/export/decimal.hpp"
#include "dataplane/export/record_names.hpp"
#include "dataplane/state/qp_merge.hpp"

namespace insert::exporter {

using namespace insert::state;

namespace {

// The summary's two reals are cut at this many characters.
constexpr std::size_t kMaxReal = 40;

// One JSON object written at a cursor; nested objects share their parent's cursor.
// Keys are string literals, so copying one is a few moves rather than a memcpy call, and
// every member is inlined into the record's writer: with ~20 fields per `msg` record and
// 700k records in a 1M-frame replay, out-of-line calls and variable-length copies were
// half of the exporter's time.
class JsonObject {
  public:
    [[gnu::always_inline]] explicit JsonObject(char*& cursor) : p_(cursor) { *p_++ = '{'; }
    [[gnu::always_inline]] ~JsonObject() { *p_++ = '}'; }

    template <std::size_t N>
    [[gnu::always_inline]] void key(const char (&k)[N]) {
        if (!first_) *p_++ = ',';
        first_ = false;
        *p_++ = '"';
        std::memcpy(p_, k, N - 1);
        p_ += N - 1;
        *p_++ = '"';
        *p_++ = ':';
    }
    // Keys that are not literals (enum names used as keys).
    [[gnu::always_inline]] void key(std::string_view k) {
        if (!first_) *p_++ = ',';
        first_ = false;
        *p_++ = '"';
        put(k);
        *p_++ = '"';
        *p_++ = ':';
    }
    template <typename K>
    [[gnu::always_inline]] void num(const K& k, uint64_t v) {
        key(k);
        p_ = decimal::write(p_, v);
    }
    template <std::size_t N>
    void real(const char (&k)[N], double v) {
        key(k);
        p_ = fmt::format_to_n(p_, kMaxReal, "{:.6f}", v).out;
    }
    template <std::size_t N>
    [[gnu::always_inline]] void opt_num(const char (&k)[N], bool valid, uint64_t v) {
        if (valid)
            num(k, v);
        else
            null(k);
    }
    template <std::size_t N>
    [[gnu::always_inline]] void null(const char (&k)[N]) {
        key(k);
        std::memcpy(p_, "null", 4);
        p_ += 4;
    }
    template <std::size_t N>
    void boolean(const char (&k)[N], bool v) {
        key(k);
        put(v ? "true" : "false");
    }
    // Enum names and IP addresses need no escaping.
    template <std::size_t N>
    [[gnu::always_inline]] void str(const char (&k)[N], std::string_view v) {
        key(k);
        *p_++ = '"';
        put(v);
        *p_++ = '"';
    }
    template <std::size_t N>
    void opt_str(const char (&k)[N], std::string_view v) {
        if (v.empty())
            null(k);
        else
            str(k, v);
    }
    template <std::size_t N>
    [[gnu::always_inline]] void ip(const char (&k)[N], const proto::IpAddress& a) {
        key(k);
        *p_++ = '"';
        p_ += a.format(p_);  // at most 45 characters and a NUL, overwritten next
        *p_++ = '"';
    }
    char*& cursor() { return p_; }

  private:
    [[gnu::always_inline]] void put(std::string_view v) {
        std::memcpy(p_, v.data(), v.size());
        p_ += v.size();
    }
    char*& p_;
    bool first_ = true;
};

void append_msg(char*& cursor, const MsgRecord& m) {
    JsonObject o(cursor);
    o.str("type", "msg");
    o.ip("src_ip", m.src_ip);
    o.ip("dst_ip", m.dst_ip);
    o.num("dst_qpn", m.dst_qpn);
    o.opt_num("src_qpn", m.has_src_qpn, m.src_qpn);
    o.str("op", msg_op_name(m.op));
    o.opt_num("imm", m.has_imm, m.imm);
    o.opt_num("inv", m.has_inv, m.inv);
    o.num("psn_first", m.psn_first);
    o.num("psn_last", m.psn_last);
    o.num("pkts", m.pkts);
    o.num("bytes", m.bytes);
    o.opt_num("va", m.has_va, m.va);
    o.opt_num("rkey", m.has_va, m.rkey);
    o.opt_num("dma_len", m.has_dma_len, m.dma_len);
    o.num("t_first_ns", m.t_first_ns);
    o.num("t_last_ns", m.t_last_ns);
    o.opt_num("t_ack_ns", m.has_ack, m.t_ack_ns);
    o.opt_num("latency_ns", m.has_ack, m.t_ack_ns - m.t_first_ns);
    o.num("retx_pkts", m.retx_pkts);
    o.num("naks", m.naks);
    o.num("rnr_naks", m.rnr_naks);
    o.str("status", msg_status_name(m.status));
}

void append_qp(char*& cursor, const QpRecord& q) {
    JsonObject o(cursor);
    o.str("type", "qp");
    o.ip("ip", q.ip);
    o.num("qpn", q.qpn);
    const bool paired = q.pair_by != PairBy::none;
    if (paired)
        o.ip("peer_ip", q.peer_ip);
    else
        o.null("peer_ip");
    o.opt_num("peer_qpn", paired, q.peer_qpn);
    o.opt_str("pair_by", pair_by_name(q.pair_by));
    o.opt_str("transport", transport_name(q.transport));
    o.num("pkts", q.pkts);
    o.num("bytes", q.bytes);
    o.key("msgs");
    {
        JsonObject m(o.cursor());
        for (int i = 0; i < 5; ++i) m.num(msg_op_name(static_cast<MsgOp>(i)), q.msgs[i]);
    }
    o.num("dup_pkts", q.dup_pkts);
    o.num("ooo_pkts", q.ooo_pkts);
    o.num("gaps", q.gaps);
    o.num("missing", q.missing);
    o.key("naks");
    {
        JsonObject n(o.cursor());
        n.num("seq", q.naks.seq);
        n.num("rnr", q.naks.rnr);
        n.num("inv", q.naks.inv);
        n.num("access", q.naks.access);
        n.num("op", q.naks.op);
    }
    o.num("cnps", q.cnps);
    o.num("ecn_ce", q.ecn_ce);
    o.num("t_first_ns", q.t_first_ns);
    o.num("t_last_ns", q.t_last_ns);
    const bool lat = q.lat_count > 0;
    o.opt_num("lat_p50_ns", lat, q.lat_p50_ns);
    o.opt_num("lat_p99_ns", lat, q.lat_p99_ns);
    o.opt_num("lat_max_ns", lat, q.lat_max_ns);
    o.boolean("final", q.final);
}

void append_event(char*& cursor, const EventRecord& e) {
    JsonObject o(cursor);
    o.str("type", "event");
    o.str("kind", event_kind_name(e.kind));
    o.ip("ip", e.ip);
    o.num("qpn", e.qpn);
    o.num("t_ns", e.t_ns);
    o.num("psn", e.psn);
    switch (e.kind) {
        case EventKind::gap:
            o.num("missing", e.missing);
            break;
        case EventKind::nak:
        case EventKind::rnr_nak:
        case EventKind::fatal_nak:
            o.num("syndrome", e.syndrome);
            break;
        case EventKind::cnp:
            o.num("count", e.count);
            break;
        case EventKind::pair:
            o.ip("peer_ip", e.peer_ip);
            o.num("peer_qpn", e.peer_qpn);
            o.str("pair_by", pair_by_name(e.pair_by));
            break;
        default:
            break;
    }
}

void write_summary_object(char*& cursor, const SummaryCounts& s) {
    JsonObject o(cursor);
    o.str("type", "summary");
    o.num("pkts", s.pkts);
    o.num("roce_pkts", s.roce_pkts);
    o.num("non_roce_pkts", s.non_roce_pkts);
    o.key("malformed");
    {
        JsonObject m(o.cursor());
        for (std::size_t i = 1; i < proto::kMalformedReasons; ++i)
            m.num(proto::malformed_name(static_cast<proto::Malformed>(i)), s.malformed[i]);
    }
    o.num("endpoints", s.endpoints);
    o.num("connections", s.connections);
    o.num("msgs", s.msgs);
    o.key("table_full");
    {
        JsonObject t(o.cursor());
        t.num("pkts", s.table_full_pkts);
        t.num("endpoints", s.table_full_endpoints);
    }
    o.boolean("interrupted", s.signal != nullptr);
    if (s.signal)
        o.str("signal", s.signal);
    else
        o.null("signal");
    o.real("wall_s", s.wall_s);
    o.real("mpps", s.mpps);
}

}  // namespace

char* write_json(char* p, const Record& r) {
    switch (r.type) {
        case RecordType::msg:
            append_msg(p, r.msg);
            break;
        case RecordType::qp:
            append_qp(p, r.qp);
            break;
        case RecordType::event:
            append_event(p, r.event);
            break;
    }
    return p;
}

namespace {
// Runs `write` at the end of `out` with kMaxJsonObject bytes of room, then trims.
template <typename Write>
void append_with(std::string& out, Write write) {
    const std::size_t base = out.size();
    out.resize(base + kMaxJsonObject);
    char* end = write(out.data() + base);
    out.resize(static_cast<std::size_t>(end - out.data()));
}
}  // namespace

void append_json(std::string& out, const Record& r) {
    append_with(out, [&](char* p) { return write_json(p, r); });
}

void append_summary_json(std::string& out, const SummaryCounts& s) {
    append_with(out, [&](char* p) { return write_summary_json(p, s); });
}

char* write_summary_json(char* p, const SummaryCounts& s) {
    write_summary_object(p, s);
    return p;
}

void merge_final_qp(QpRecord& into, const QpRecord& other) {
    state::merge_qp(into, other);
}

namespace {
void fill_latency(QpRecord& q, const LatencyHistogram* h) {
    q.lat_count = h ? h->count() : 0;
    if (h && h->count() > 0) {
        q.lat_p50_ns = h->percentile(50);
        q.lat_p99_ns = h->percentile(99);
        q.lat_max_ns = h->max();
    }
}

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
}  // namespace

void RecordWriter::fill_latency(QpRecord& q) const {
    LatencyHistogram scratch;
    exporter::fill_latency(q, endpoint_latency(book_, {q.ip, q.qpn}, scratch));
}

void RecordWriter::emit(const Record& r) {
    ++records_;
    if (observer_) observer_(r);
    if (!out_) return;
    char* end = write_json(buffer_.get() + used_, r);
    *end++ = '\n';
    used_ = static_cast<std::size_t>(end - buffer_.get());
    if (used_ >= kFlushBytes) flush();
}

void RecordWriter::write(Record& r) {
    // Latencies are kept per part (the msg's source): a part's messages and its own records
    // come from one worker, in order, so what an evicted part reports does not depend on
    // the worker count.
    if (r.type == RecordType::msg && r.msg.has_ack)
        book_.part({r.msg.dst_ip, r.msg.dst_qpn}, r.msg.src_ip)
            .latency.add(r.msg.t_ack_ns - r.msg.t_first_ns);
    if (r.type == RecordType::qp) {
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
            return;
        }
        if (q.evicted && !bounded_memory_) evicted_seen_.insert(key);
        if (q.evicted && q.endpoint_gone) ++endpoints_gone_;
        if (q.evicted && split_tick_ns_ != 0 && q.transport == TransportFamily::ud) {
            held_evictions_.push_back(r);
            return;
        }
        if (q.evicted) {
            // One part went idle: its messages' latencies, then they go with it.
            exporter::fill_latency(q, [&]() -> const LatencyHistogram* {
                const EndpointBook::Entry* e = book_.find_part(key, q.src_ip);
                return e ? &e->latency : nullptr;
            }());
            emit(r);
            book_.erase_part(key, q.src_ip);
            return;
        }
        fill_latency(q);
    }
    emit(r);
}

void RecordWriter::join_held_evictions() {
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
                fill_latency(group.qp);
                emit(group);
            }
        }
    }
    held_evictions_.clear();
}

namespace {

// Final records fill their latencies from their book entries, which are in arrival order,
// not address order: fetched a few ahead.
constexpr uint32_t kFinalsAhead = 8;
// From this many final records on, half of them are formatted on a second thread: they are
// written after the last frame, so they are a replay's serial tail (100k endpoints: 70 ms
// on one core).
constexpr uint32_t kParallelFinals = 4096;

// JSON lines formatted on the second thread, in blocks, until the first half is written.
class TextBlocks {
  public:
    // Room for one more record.
    char* room() {
        if (blocks_.empty() || kBlockBytes - used_.back() < kMaxJsonObject + 1) {
            blocks_.push_back(std::make_unique<char[]>(kBlockBytes));
            used_.push_back(0);
        }
        return blocks_.back().get() + used_.back();
    }
    void wrote(char* end) { used_.back() = static_cast<std::size_t>(end - blocks_.back().get()); }
    bool write_to(std::FILE* out) const {
        bool ok = true;
        for (std::size_t b = 0; b < blocks_.size(); ++b)
            ok = std::fwrite(blocks_[b].get(), 1, used_[b], out) == used_[b] && ok;
        return ok;
    }

  private:
    static constexpr std::size_t kBlockBytes = 4u << 20;
    std::vector<std::unique_ptr<char[]>> blocks_;
    std::vector<std::size_t> used_;
};

}  // namespace

void RecordWriter::write_summary(SummaryCounts s) {
    join_held_evictions();
    const uint32_t n = finals_.size();
    // Final records fill their latencies from the book, in arrival order, not address
    // order: the slot is fetched 2 x kFinalsAhead ahead, the part entry it names kFinalsAhead.
    const auto fill = [this, n](uint32_t i, LatencyHistogram& scratch) {
        if (i + 2 * kFinalsAhead < n) book_.prefetch(final_keys_[i + 2 * kFinalsAhead]);
        if (i + kFinalsAhead < n) book_.prefetch_entry(final_keys_[i + kFinalsAhead]);
        exporter::fill_latency(finals_[i].qp, endpoint_latency(book_, final_keys_[i], scratch));
    };
    // The two threads only read the book and write their own records.
    const uint32_t split = (out_ && n >= kParallelFinals) ? n / 2 : n;
    TextBlocks second_half;
    std::thread helper;
    if (split < n)
        helper = std::thread([&] {
            LatencyHistogram scratch;
            for (uint32_t i = split; i < n; ++i) {
                fill(i, scratch);
                char* end = write_json(second_half.room(), finals_[i]);
                *end++ = '\n';
                second_half.wrote(end);
            }
        });
    LatencyHistogram scratch;
    for (uint32_t i = 0; i < split; ++i) {
        fill(i, scratch);
        emit(finals_[i]);
    }
    if (helper.joinable()) {
        helper.join();
        // In order: the observer sees and the output holds the records as one thread
        // would have written them.
        for (uint32_t i = split; i < n; ++i) {
            ++records_;
            if (observer_) observer_(finals_[i]);
        }
        flush();
        if (!second_half.write_to(out_)) failed_ = true;
    }
    if (!bounded_memory_) {
        std::size_t distinct = n;
        for (const EndpointKey& k : evicted_seen_)
            if (book_.final_record_of(k) == EndpointBook::kNoFinal) ++distinct;
        s.endpoints = distinct;
    } else {
        s.endpoints = n + endpoints_gone_;
    }
    for (const EndpointKey& k : final_keys_) book_.final_record(k) = EndpointBook::kNoFinal;
    finals_.clear();
    final_keys_.clear();
    ++records_;
    if (!out_) return;
    char* end = write_summary_json(buffer_.get() + used_, s);
    *end++ = '\n';
    used_ = static_cast<std::size_t>(end - buffer_.get());
    flush();
}

bool RecordWriter::flush() {
    if (out_ && used_ > 0) {
        if (std::fwrite(buffer_.get(), 1, used_, out_) != used_) failed_ = true;
        used_ = 0;
    }
    if (out_ && std::fflush(out_) != 0) failed_ = true;
    return !failed_;
}

}  // namespace insert::exporter
