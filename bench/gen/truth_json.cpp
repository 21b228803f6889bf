#include "bench/gen/truth_json.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string_view>

#include "dataplane/proto/opcodes.hpp"

namespace insert::gen {

namespace {

// A buffered JSON emitter for fixed-shape records. The `large` scenario writes a
// quarter-gigabyte truth file; format-string parsing per field cost more than the whole
// simulation, and std::string appends (a capacity check and call per piece) still made
// this writer a third of the generator's instructions (callgrind), so pieces are copied
// into a flat buffer and written out in 1 MiB blocks. A record reserves room for its
// longest possible form once (begin_record); keys, numbers and short strings inside it
// are then appended without a bounds check each.
class JsonOut {
  public:
    explicit JsonOut(std::FILE* f) : f_(f), buf_(new char[kBufBytes]), p_(buf_.get()) {}

    JsonOut& raw(std::string_view s) {
        if (s.size() > kBufBytes - kMaxPiece) {  // longer than the buffer: write through
            flush();
            if (std::fwrite(s.data(), 1, s.size(), f_) != s.size()) ok_ = false;
            return *this;
        }
        room(s.size());
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    // Decimal digits from a table of pairs, in 8-digit chunks of 32-bit arithmetic:
    // most numbers are 19-digit nanosecond timestamps, and a loop of dependent 64-bit
    // divisions by 100 cost ~85 instructions per number (callgrind); the chunks' pairs are
    // independent of each other.
    [[gnu::always_inline]] JsonOut& num(uint64_t v) {
        constexpr uint64_t k1e8 = 100'000'000;
        if (v < k1e8) {
            p_ = short_num(p_, static_cast<uint32_t>(v));
        } else if (v < k1e8 * k1e8) {
            p_ = short_num(p_, static_cast<uint32_t>(v / k1e8));
            p_ = eight_digits(p_, static_cast<uint32_t>(v % k1e8));
        } else {
            const uint64_t high = v / k1e8;
            p_ = short_num(p_, static_cast<uint32_t>(high / k1e8));
            p_ = eight_digits(p_, static_cast<uint32_t>(high % k1e8));
            p_ = eight_digits(p_, static_cast<uint32_t>(v % k1e8));
        }
        return *this;
    }
    // `,"key":value` (first: no comma). Keys are string literals: their length is a
    // compile-time constant, so the copy is a few moves instead of a memcpy call.
    // Inside a record (after begin_record): a string literal, a short string.
    template <std::size_t N>
    [[gnu::always_inline]] JsonOut& lit(const char (&s)[N]) {
        static_assert(N <= kMaxPiece);
        std::memcpy(p_, s, N - 1);
        p_ += N - 1;
        return *this;
    }
    JsonOut& str(std::string_view s) {
        if (s.size() > kMaxPiece) return raw(s);
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    // Room for the longest record (a qp record is under 1.5 KB: ~35 keys, numbers of at
    // most 20 digits, two addresses of at most 45 characters).
    JsonOut& reserve() {
        room(kMaxRecord);
        return *this;
    }
    JsonOut& begin_record() { return reserve().lit("{"); }
    template <std::size_t N>
    [[gnu::always_inline]] JsonOut& key(const char (&k)[N], bool first = false) {
        static_assert(N + 3 <= kMaxPiece);
        if (!first) *p_++ = ',';
        *p_++ = '"';
        std::memcpy(p_, k, N - 1);
        p_ += N - 1;
        *p_++ = '"';
        *p_++ = ':';
        return *this;
    }
    template <std::size_t N>
    [[gnu::always_inline]] JsonOut& field(const char (&k)[N], uint64_t v) {
        return key(k).num(v);
    }
    template <std::size_t N>
    JsonOut& field_str(const char (&k)[N], std::string_view v) {
        key(k).lit("\"").str(v).lit("\"");
        return *this;
    }
    template <std::size_t N, typename T>
    JsonOut& field_opt(const char (&k)[N], const std::optional<T>& v) {
        key(k);
        return v ? num(*v) : lit("null");
    }
    void end_record(bool more) {
        if (more)
            lit("},\n");
        else
            lit("}\n");
        if (used() >= kFlushBytes) flush();
    }
    bool flush() {
        const std::size_t n = used();
        if (n && std::fwrite(buf_.get(), 1, n, f_) != n) ok_ = false;
        p_ = buf_.get();
        return ok_;
    }

  private:
    [[gnu::always_inline]] static char* two_digits(char* d, uint32_t v) {
        std::memcpy(d, &kDigitPairs[v * 2], 2);
        return d + 2;
    }
    [[gnu::always_inline]] static char* eight_digits(char* d, uint32_t v) {
        const uint32_t high = v / 10'000, low = v % 10'000;
        two_digits(d, high / 100);
        two_digits(d + 2, high % 100);
        two_digits(d + 4, low / 100);
        two_digits(d + 6, low % 100);
        return d + 8;
    }
    // v < 10^8, without leading zeros. Most numbers are counters of 0 or 1.
    [[gnu::always_inline]] static char* short_num(char* d, uint32_t v) {
        if (v < 10) {
            *d = static_cast<char>('0' + v);
            return d + 1;
        }
        if (v < 100) return two_digits(d, v);
        const int n = v < 1'000        ? 3
                      : v < 10'000     ? 4
                      : v < 100'000    ? 5
                      : v < 1'000'000  ? 6
                      : v < 10'000'000 ? 7
                                       : 8;
        char* const end = d + n;
        char* t = end;
        while (v >= 100) {
            t -= 2;
            two_digits(t, v % 100);
            v /= 100;
        }
        if (v >= 10)
            two_digits(t - 2, v);
        else
            t[-1] = static_cast<char>('0' + v);
        return end;
    }
    static constexpr char kDigitPairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    static constexpr std::size_t kFlushBytes = 1 << 20;
    // Keys, numbers and the other pieces are far shorter; longer strings are written through.
    static constexpr std::size_t kMaxPiece = 64;
    static constexpr std::size_t kMaxRecord = 4096;
    static constexpr std::size_t kBufBytes = kFlushBytes + kMaxRecord;
    std::size_t used() const { return static_cast<std::size_t>(p_ - buf_.get()); }
    void room(std::size_t n) {
        if (kBufBytes - used() < n) flush();
    }

    std::FILE* f_;
    std::unique_ptr<char[]> buf_;
    char* p_;
    bool ok_ = true;
};

}  // namespace

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, unsigned percent) {
    const std::size_t n = sorted.size();
    const std::size_t rank = (n * percent + 99) / 100;  // ceil(p/100 * n), at least 1
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

bool write_truth_json(const Scenario& sc, const TruthObserver& truth, const TruthFileInfo& info,
                      const std::string& path, std::string& error) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    std::vector<std::string> host_ip;
    for (const HostSpec& h : sc.hosts) host_ip.push_back(h.ip.to_string());

    JsonOut w(f);
    w.raw("{\"generator\":\"insert-gen\",\"scenario\":\"").raw(info.scenario);
    w.reserve().lit("\",\"seed\":").num(info.seed).lit(",\n\"msgs\":[\n");
    const auto& msgs = truth.msgs();
    for (std::size_t i = 0; i < msgs.size(); ++i) {
        const TruthMsg& m = msgs[i];
        // SPEC 7 `msg`, in SPEC's field order; gen_msg (extra) is the generator's message index.
        w.begin_record().key("type", true).lit("\"msg\"");
        w.field_str("src_ip", host_ip[m.src_host]).field_str("dst_ip", host_ip[m.dst_host]);
        w.field("dst_qpn", m.dst_qpn)
            .field_opt("src_qpn", m.src_qpn)
            .field_str("op", op_name(m.op));
        w.field_opt("imm", m.imm).field_opt("inv", m.inv);
        w.field("psn_first", m.psn_first)
            .field("psn_last", m.psn_last)
            .field("pkts", m.pkts)
            .field("bytes", m.bytes);
        w.field_opt("va", m.va).field_opt("rkey", m.rkey).field_opt("dma_len", m.dma_len);
        w.field("t_first_ns", m.t_first_ns)
            .field("t_last_ns", m.t_last_ns)
            .field_opt("t_ack_ns", m.t_ack_ns);
        std::optional<uint64_t> latency;
        if (m.t_ack_ns) latency = *m.t_ack_ns - m.t_first_ns;
        w.field_opt("latency_ns", latency);
        w.field("retx_pkts", m.retx_pkts).field("naks", m.naks).field("rnr_naks", m.rnr_naks);
        w.field_str("status", status_name(m.status)).field("gen_msg", m.msg_uid);
        w.end_record(i + 1 < msgs.size());
    }
    w.raw("],\n\"qps\":[\n");

    // Final qp records ordered by (ip, qpn) so the file does not depend on arrival order.
    const auto& eps = truth.endpoints();
    std::vector<std::size_t> order(eps.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
        const auto& a = eps[x];
        const auto& b = eps[y];
        if (sc.hosts[a.host].ip != sc.hosts[b.host].ip)
            return sc.hosts[a.host].ip < sc.hosts[b.host].ip;
        return a.qpn < b.qpn;
    });
    std::vector<uint64_t> lat;
    for (std::size_t k = 0; k < order.size(); ++k) {
        const TruthEndpoint& e = eps[order[k]];
        w.begin_record()
            .key("type", true)
            .lit("\"qp\"")
            .field_str("ip", host_ip[e.host])
            .field("qpn", e.qpn);
        if (e.peer >= 0) {
            const TruthEndpoint& p = eps[e.peer];
            w.field_str("peer_ip", host_ip[p.host]).field("peer_qpn", p.qpn);
            w.field_str("pair_by", pair_rule_name(e.pair_by));
        } else {
            w.key("peer_ip").lit("null").key("peer_qpn").lit("null").key("pair_by").lit("null");
        }
        if (e.transport >= 0)
            w.field_str("transport",
                        proto::transport_name(static_cast<proto::Transport>(e.transport)));
        else
            w.key("transport").lit("null");
        w.field("pkts", e.pkts).field("bytes", e.bytes);
        w.key("msgs")
            .lit("{")
            .key("SEND", true)
            .num(e.msgs[0])
            .field("WRITE", e.msgs[1])
            .field("READ", e.msgs[2]);
        w.field("CMP_SWAP", e.msgs[3]).field("FETCH_ADD", e.msgs[4]).lit("}");
        w.field("dup_pkts", e.dup_pkts)
            .field("ooo_pkts", e.ooo_pkts)
            .field("gaps", e.gaps)
            .field("missing", e.missing);
        w.key("naks")
            .lit("{")
            .key("seq", true)
            .num(e.naks.seq)
            .field("rnr", e.naks.rnr)
            .field("inv", e.naks.inv);
        w.field("access", e.naks.access).field("op", e.naks.op).lit("}");
        w.field("cnps", e.cnps)
            .field("ecn_ce", e.ecn_ce)
            .field("t_first_ns", e.t_first_ns)
            .field("t_last_ns", e.t_last_ns);
        const std::span<const uint64_t> latencies = truth.latencies(order[k]);
        if (latencies.empty()) {
            w.key("lat_p50_ns")
                .lit("null")
                .key("lat_p99_ns")
                .lit("null")
                .key("lat_max_ns")
                .lit("null");
        } else {
            // SPEC 7: nearest-rank percentiles, exact here; lat_max exact.
            lat.assign(latencies.begin(), latencies.end());
            std::sort(lat.begin(), lat.end());
            w.field("lat_p50_ns", nearest_rank(lat, 50)).field("lat_p99_ns", nearest_rank(lat, 99));
            w.field("lat_max_ns", lat.back());
        }
        w.key("final").lit("true");
        w.end_record(k + 1 < order.size());
    }
    const TruthSummary& s = truth.summary();
    w.raw("],\n\"summary\":").begin_record().key("type", true).lit("\"summary\"");
    w.field("pkts", s.pkts);
    w.field("roce_pkts", s.roce_pkts).field("non_roce_pkts", s.non_roce_pkts);
    w.key("malformed").lit("{").key("length_mismatch", true).num(s.malformed[0]);
    w.field("truncated", s.malformed[1]).field("reserved_opcode", s.malformed[2]).lit("}");
    w.field("endpoints", s.endpoints).field("connections", s.connections).field("msgs", s.msgs);
    w.raw("}\n}\n");
    const bool ok = w.flush();
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) {
        error = path + ": write failed";
        std::remove(path.c_str());
        return false;
    }
    return true;
}

}  // namespace insert::gen
