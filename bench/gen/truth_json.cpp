#include "bench/gen/truth_json.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <string_view>
#include <thread>

#include "bench/gen/json_out.hpp"
#include "dataplane/proto/opcodes.hpp"

namespace insert::gen {

namespace {

// (key, index) pairs in key order: an LSD radix sort a byte at a time, skipping the bytes
// that are the same in every key (on `large` four passes over 100k pairs, ~1 ms, where
// std::sort took ~7 ms at the end of the run, with nothing else left to do). Stable; the
// keys here are distinct, so the order is the one std::sort gives.
void sort_by_key(std::vector<std::pair<uint64_t, uint32_t>>& v) {
    std::vector<std::pair<uint64_t, uint32_t>> tmp(v.size());
    for (unsigned shift = 0; shift < 64; shift += 8) {
        std::array<std::size_t, 257> at{};
        for (const auto& x : v) ++at[((x.first >> shift) & 0xFF) + 1];
        if (*std::max_element(at.begin(), at.end()) == v.size()) continue;  // one value
        for (std::size_t d = 1; d < at.size(); ++d) at[d] += at[d - 1];
        for (const auto& x : v) tmp[at[(x.first >> shift) & 0xFF]++] = x;
        v.swap(tmp);
    }
}

}  // namespace

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, unsigned percent) {
    const std::size_t n = sorted.size();
    const std::size_t rank = (n * percent + 99) / 100;  // ceil(p/100 * n), at least 1
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

TruthJsonWriter::TruthJsonWriter(const Scenario& scenario) : sc_(scenario) {
    for (const HostSpec& h : sc_.hosts)
        host_str_.emplace_back(h.ip.to_string());  // at most 45 characters (IPv6)
    for (std::size_t op = 0; op < kOpTypes; ++op)
        op_str_.emplace_back(op_name(static_cast<OpType>(op)));
    for (int st = 0; st <= static_cast<int>(TruthStatus::incomplete); ++st)
        status_str_.emplace_back(status_name(static_cast<TruthStatus>(st)));
}

TruthJsonWriter::~TruthJsonWriter() {
    if (f_) abandon();
}

void TruthJsonWriter::abandon() {
    std::fclose(f_);
    f_ = nullptr;
    std::remove(path_.c_str());
}

bool TruthJsonWriter::open(const std::string& path, const TruthFileInfo& info, std::string& error) {
    path_ = path;
    const int fd = file_.open(path, 0666);  // fopen(path, "wb")'s mode
    f_ = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
    if (!f_) {
        error = path + ": " + std::strerror(errno);
        if (fd >= 0) ::close(fd);
        return false;
    }
    w_ = std::make_unique<JsonOut>(f_, file_);
    JsonOut& w = *w_;
    w.raw("{\"generator\":\"insert-gen\",\"scenario\":\"").raw(info.scenario);
    JsonCursor c = w.reserve();
    c.lit("\",\"seed\":").num(info.seed).lit(",\n\"msgs\":[\n");
    w.commit(c);
    return true;
}

// Records are separated by ",\n" and the last one ends with "\n" (written by finish()):
// the bytes of a list written knowing which record is the last.
void TruthJsonWriter::on_msg(const TruthMsg& m) {
    JsonCursor w = w_->reserve();
    if (msgs_++ > 0) w.lit(",\n");
    // SPEC 7 `msg`, in SPEC's field order; gen_msg (extra) is the generator's message index.
    w.lit("{").key("type", true).lit("\"msg\"");
    w.key("src_ip").padded(host_str_[m.src_host]).key("dst_ip").padded(host_str_[m.dst_host]);
    w.field("dst_qpn", m.dst_qpn).field_opt("src_qpn", m.src_qpn);
    w.key("op").padded(op_str_[static_cast<int>(m.op)]);
    w.field_opt("imm", m.imm).field_opt("inv", m.inv);
    w.field("psn_first", m.psn_first)
        .field("psn_last", m.psn_last)
        .field("pkts", m.pkts)
        .field("bytes", m.bytes);
    w.field_opt("va", m.va).field_opt("rkey", m.rkey).field_opt("dma_len", m.dma_len);
    w.key("t_first_ns").timestamp(m.t_first_ns, ts_);
    w.key("t_last_ns").timestamp(m.t_last_ns, ts_).key("t_ack_ns");
    if (m.t_ack_ns)
        w.timestamp(*m.t_ack_ns, ts_);
    else
        w.lit("null");
    std::optional<uint64_t> latency;
    if (m.t_ack_ns) latency = *m.t_ack_ns - m.t_first_ns;
    w.field_opt("latency_ns", latency);
    w.field("retx_pkts", m.retx_pkts).field("naks", m.naks).field("rnr_naks", m.rnr_naks);
    w.key("status").padded(status_str_[static_cast<int>(m.status)]).field("gen_msg", m.msg_uid);
    w.lit("}");
    w_->commit(w);
    if (tap_) tap_->on_msg(m);
}

// qp records [begin, end) of `order`; the file's last record ends without a comma.
void TruthJsonWriter::write_qps(JsonOut& out, const TruthObserver& truth,
                                const std::vector<uint32_t>& order, std::size_t begin,
                                std::size_t end) const {
    const auto& eps = truth.endpoints();
    std::vector<uint64_t> lat;
    // The endpoints come in (ip, qpn) order, at random in memory: on `large` the misses on
    // an endpoint, its peer and its latencies were ~3/4 of the records' time. Loaded in two
    // stages ahead: the endpoint's five lines and where its latencies are, then its peer's
    // first line and the latencies.
    constexpr std::size_t kAhead = 8, kLate = 4;
    for (std::size_t k = begin; k < end; ++k) {
        if (k + kAhead < end) {
            const char* ahead = reinterpret_cast<const char*>(&eps[order[k + kAhead]]);
            for (std::size_t off = 0; off < sizeof(TruthEndpoint); off += 64)
                __builtin_prefetch(ahead + off);
            truth.prefetch_latency_range(order[k + kAhead]);
        }
        if (k + kLate < end) {
            const TruthEndpoint& late = eps[order[k + kLate]];
            if (late.peer >= 0) __builtin_prefetch(&eps[static_cast<std::size_t>(late.peer)]);
            truth.prefetch_latencies(order[k + kLate]);
        }
        const TruthEndpoint& e = eps[order[k]];
        JsonCursor w = out.reserve();
        w.lit("{")
            .key("type", true)
            .lit("\"qp\"")
            .key("ip")
            .padded(host_str_[e.host])  // a fixed-size copy, not a memcpy call
            .field("qpn", e.qpn);
        if (e.peer >= 0) {
            const TruthEndpoint& p = eps[e.peer];
            w.key("peer_ip").padded(host_str_[p.host]).field("peer_qpn", p.qpn);
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
        if (k + 1 < order.size())
            w.lit("},\n");
        else
            w.lit("}\n");
        out.commit(w);
    }
}

// At the end of a run nothing else is left to do: a helper thread formats two chunks of
// every three into a few reused buffers, and this thread writes the chunks in file order,
// formatting every third itself (and writing them all). Reused buffers, because one fresh
// buffer for half the file (35 MB on `large`) spends half its time zeroing pages on first
// touch while this thread waits (docs/insert-gen.md "Speed").
void TruthJsonWriter::write_qps_interleaved(JsonOut& out, const TruthObserver& truth,
                                            const std::vector<uint32_t>& order) const {
    constexpr std::size_t kChunk = 256;  // records: ~115 KB on `large`
    constexpr std::size_t kSlots = 8;
    struct Slot {
        HugeVector<char> bytes;
        JsonOut out{bytes};
        std::atomic<bool> full{false};
    };
    std::array<Slot, kSlots> slots;
    const std::size_t chunks = (order.size() + kChunk - 1) / kChunk;
    auto mine = [](std::size_t c) { return c % 3 == 0; };
    // The helper's k-th chunk (k = c - c / 3 - 1) goes through slot k % kSlots.
    auto slot = [&](std::size_t c) -> Slot& { return slots[(c - c / 3 - 1) % kSlots]; };
    auto range_end = [&](std::size_t c) { return std::min(order.size(), (c + 1) * kChunk); };
    std::jthread helper([&] {
        for (std::size_t c = 0; c < chunks; ++c) {
            if (mine(c)) continue;
            Slot& s = slot(c);
            s.full.wait(true, std::memory_order_acquire);  // until written out
            write_qps(s.out, truth, order, c * kChunk, range_end(c));
            s.full.store(true, std::memory_order_release);
            s.full.notify_one();
        }
    });
    for (std::size_t c = 0; c < chunks; ++c) {
        if (mine(c)) {
            write_qps(out, truth, order, c * kChunk, range_end(c));
            continue;
        }
        Slot& s = slot(c);
        s.full.wait(false, std::memory_order_acquire);
        // A chunk is mostly still in the slot's buffer (`bytes` only takes what overflows).
        out.raw_through({s.bytes.data(), s.bytes.size()}).raw_through(s.out.pending());
        s.bytes.clear();
        s.out.discard();
        s.full.store(false, std::memory_order_release);
        s.full.notify_one();
    }
}

// Final qp records ordered by (ip, qpn) so the file does not depend on arrival order.
std::vector<uint32_t> TruthJsonWriter::qp_order(const TruthObserver& truth) const {
    // (rank of the host's address, qpn) as one integer: addresses are distinct, so this is
    // the (ip, qpn) order, without comparing addresses 2 million times.
    std::vector<uint32_t> by_ip(sc_.hosts.size());
    std::iota(by_ip.begin(), by_ip.end(), 0);
    std::sort(by_ip.begin(), by_ip.end(),
              [&](uint32_t x, uint32_t y) { return sc_.hosts[x].ip < sc_.hosts[y].ip; });
    std::vector<uint64_t> rank(sc_.hosts.size());
    for (std::size_t r = 0; r < by_ip.size(); ++r) rank[by_ip[r]] = r;
    const auto& eps = truth.endpoints();
    std::vector<std::pair<uint64_t, uint32_t>> keyed(eps.size());
    for (std::size_t i = 0; i < eps.size(); ++i)
        keyed[i] = {(rank[eps[i].host] << 32) | eps[i].qpn, static_cast<uint32_t>(i)};
    sort_by_key(keyed);
    std::vector<uint32_t> order(eps.size());
    for (std::size_t i = 0; i < eps.size(); ++i) order[i] = keyed[i].second;
    return order;
}

bool TruthJsonWriter::finish(const TruthObserver& truth, std::string& error) {
    JsonOut& out = *w_;
    if (msgs_ > 0) out.raw("\n");
    out.raw("],\n\"qps\":[\n");
    const std::vector<uint32_t> order = qp_order(truth);
    if (order.size() >= kParallelQps)
        write_qps_interleaved(out, truth, order);
    else
        write_qps(out, truth, order, 0, order.size());
    const TruthSummary& s = truth.summary();
    out.raw("],\n\"summary\":");
    JsonCursor w = out.reserve();
    w.lit("{").key("type", true).lit("\"summary\"");
    w.field("pkts", s.pkts);
    w.field("roce_pkts", s.roce_pkts).field("non_roce_pkts", s.non_roce_pkts);
    w.key("malformed").lit("{").key("length_mismatch", true).num(s.malformed[0]);
    w.field("truncated", s.malformed[1]).field("reserved_opcode", s.malformed[2]).lit("}");
    w.field("endpoints", s.endpoints).field("connections", s.connections).field("msgs", s.msgs);
    w.lit("}\n}\n");
    out.commit(w);
    const bool ok = out.flush() && out.finish_file();
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok || !closed) {
        error = path_ + ": write failed";
        std::remove(path_.c_str());
        return false;
    }
    return true;
}

bool write_truth_json(const Scenario& sc, const TruthObserver& truth, const TruthFileInfo& info,
                      const std::string& path, std::string& error) {
    TruthJsonWriter writer(sc);
    if (!writer.open(path, info, error)) return false;
    for (const TruthMsg& m : truth.msgs()) writer.on_msg(m);
    return writer.finish(truth, error);
}

}  // namespace insert::gen
