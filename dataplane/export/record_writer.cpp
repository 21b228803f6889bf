#include "dataplane/export/record_writer.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "dataplane/common/json_cursor.hpp"
#include "dataplane/common/version.hpp"
#include "dataplane/export/record_names.hpp"

namespace insert::exporter {

using namespace insert::state;

namespace {

// The summary's two reals are cut at this many characters.
constexpr std::size_t kMaxReal = 40;

// One JSON object written with the shared cursor (json_cursor.hpp) at `cursor`, which it
// advances when it closes; an object nested in it continues at its position(). Every member
// is inlined into the record's writer: with ~20 fields per `msg` record and 700k records
// in a 1M-frame replay, out-of-line calls and variable-length copies were half of the
// exporter's time.
class JsonObject {
  public:
    [[gnu::always_inline]] explicit JsonObject(char*& cursor) : out_(cursor), c_(cursor) {
        c_.lit("{");
    }
    [[gnu::always_inline]] ~JsonObject() {
        c_.lit("}");
        out_ = c_.pos();
    }

    template <typename K>
    [[gnu::always_inline]] void key(const K& k) {
        c_.key(k, first_);
        first_ = false;
    }
    template <typename K>
    [[gnu::always_inline]] void num(const K& k, uint64_t v) {
        key(k);
        c_.num(v);
    }
    template <std::size_t N>
    void real(const char (&k)[N], double v) {
        key(k);
        char*& p = c_.position();
        p = fmt::format_to_n(p, kMaxReal, "{:.6f}", v).out;
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
        c_.lit("null");
    }
    template <std::size_t N>
    void boolean(const char (&k)[N], bool v) {
        key(k);
        if (v)
            c_.lit("true");
        else
            c_.lit("false");
    }
    // Enum names and IP addresses need no escaping.
    template <std::size_t N>
    [[gnu::always_inline]] void str(const char (&k)[N], std::string_view v) {
        key(k);
        c_.lit("\"").str(v).lit("\"");
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
        c_.ip(a);
    }
    // A MAC address as "aa:bb:cc:dd:ee:ff".
    template <std::size_t N>
    [[gnu::always_inline]] void mac(const char (&k)[N], const std::array<uint8_t, 6>& a) {
        static constexpr char kHex[] = "0123456789abcdef";
        key(k);
        char text[19];
        text[0] = '"';
        for (std::size_t i = 0; i < a.size(); ++i) {
            text[1 + 3 * i] = kHex[a[i] >> 4];
            text[2 + 3 * i] = kHex[a[i] & 0xF];
            text[3 + 3 * i] = ':';
        }
        text[18] = '"';
        c_.str({text, sizeof text});
    }
    // Where an object nested in this one starts (it writes its end back here).
    char*& cursor() { return c_.position(); }

  private:
    char*& out_;
    JsonCursor c_;
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
    o.mac("src_mac", m.origin.src_mac);
    o.num("ttl", m.origin.ttl);
    o.opt_num("port", m.port != proto::kNoPort, m.port);
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

// docs/semantics.md "Events": a windowed kind's record is the window of one destination
// endpoint and kind; `t_ns`/`psn` (and `syndrome`) are its first event's.
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
        case EventKind::pair:
            o.ip("peer_ip", e.peer_ip);
            o.num("peer_qpn", e.peer_qpn);
            o.str("pair_by", pair_by_name(e.pair_by));
            return;
        default:
            break;
    }
    o.num("count", e.count);
    o.num("sources", e.sources.count());
    o.boolean("sources_exact", e.sources.exact());
    o.num("t_last_ns", e.t_last_ns);
    o.num("window_ns", uint64_t{e.window} * kEventWindowNs);
}

void write_summary_object(char*& cursor, const SummaryCounts& s) {
    JsonObject o(cursor);
    o.str("type", "summary");
    o.str("schema", kRecordSchema);  // docs/records.md
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
    if (s.unix_socket) {
        o.key("unix");
        JsonObject u(o.cursor());
        u.num("connects", s.unix_connects);
        u.num("dropped", s.unix_dropped);
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
        case RecordType::mark:  // never written: the exporter's merge consumes them
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

void RecordWriter::emit(const Record& r) {
    ++records_;
    if (observer_) observer_(r);
    if (!out_) return;
    char* end = write_json(buffer_.get() + used_, r);
    *end++ = '\n';
    used_ = static_cast<std::size_t>(end - buffer_.get());
    if (used_ >= kFlushBytes) flush();
}

namespace {

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
    events_.finish(emit_);
    finaliser_.join_held_evictions([this](const Record& r) { emit(r); });
    const uint32_t n = finaliser_.finals();
    // The two threads only read the finaliser's book and fill their own records.
    const uint32_t split = (out_ && n >= kParallelFinals) ? n / 2 : n;
    TextBlocks second_half;
    std::thread helper;
    if (split < n)
        helper = std::thread([&] {
            LatencyHistogram scratch;
            for (uint32_t i = split; i < n; ++i) {
                char* end = write_json(second_half.room(), finaliser_.final_record(i, scratch));
                *end++ = '\n';
                second_half.wrote(end);
            }
        });
    LatencyHistogram scratch;
    for (uint32_t i = 0; i < split; ++i) emit(finaliser_.final_record(i, scratch));
    if (helper.joinable()) {
        helper.join();
        // In order: the observer sees and the output holds the records as one thread
        // would have written them.
        for (uint32_t i = split; i < n; ++i) {
            ++records_;
            if (observer_) observer_(finaliser_.filled_final(i));
        }
        flush();
        if (!second_half.write_to(out_)) failed_ = true;
    }
    s.endpoints = finaliser_.summary_endpoints();
    finaliser_.clear_finals();
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
