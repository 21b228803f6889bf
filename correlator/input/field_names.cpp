#include "correlator/input/field_names.hpp"

#include <cstdlib>
#include <utility>

namespace insert::correlate {

namespace {

constexpr std::pair<std::string_view, Field> kNames[] = {
    {"type", Field::type},
    {"src_ip", Field::src_ip},
    {"dst_ip", Field::dst_ip},
    {"dst_qpn", Field::dst_qpn},
    {"src_qpn", Field::src_qpn},
    {"op", Field::op},
    {"imm", Field::imm},
    {"psn_first", Field::psn_first},
    {"psn_last", Field::psn_last},
    {"pkts", Field::pkts},
    {"bytes", Field::bytes},
    {"va", Field::va},
    {"rkey", Field::rkey},
    {"dma_len", Field::dma_len},
    {"t_first_ns", Field::t_first_ns},
    {"t_last_ns", Field::t_last_ns},
    {"t_ack_ns", Field::t_ack_ns},
    {"retx_pkts", Field::retx_pkts},
    {"naks", Field::naks},
    {"rnr_naks", Field::rnr_naks},
    {"status", Field::status},
    {"src_mac", Field::src_mac},
    {"ttl", Field::ttl},
    {"port", Field::port},
    {"ip", Field::ip},
    {"qpn", Field::qpn},
    {"peer_ip", Field::peer_ip},
    {"peer_qpn", Field::peer_qpn},
    {"pair_by", Field::pair_by},
    {"cnps", Field::cnps},
    {"ecn_ce", Field::ecn_ce},
    {"final", Field::final},
    {"verb", Field::verb},
    {"host", Field::host},
    {"pid", Field::pid},
    {"tid", Field::tid},
    {"comm", Field::comm},
    {"cgroup", Field::cgroup},
    {"wall_ns", Field::wall_ns},
    {"qp", Field::qp},
    {"mr", Field::mr},
    {"ret", Field::ret},
    {"qp_type", Field::qp_type},
    {"pd", Field::pd},
    {"state", Field::state},
    {"dest_qpn", Field::dest_qpn},
    {"sq_psn", Field::sq_psn},
    {"rq_psn", Field::rq_psn},
    {"qp_access", Field::qp_access},
    {"addr", Field::addr},
    {"length", Field::length},
    {"access", Field::access},
    {"wr_id", Field::wr_id},
    {"opcode", Field::opcode},
    {"signaled", Field::signaled},
    {"len", Field::len},
    {"remote_addr", Field::remote_addr},
    {"chain_index", Field::chain_index},
    {"status_code", Field::status_code},
    {"byte_len", Field::byte_len},
    {"ringbuf_drops", Field::ringbuf_drops},
    {"iova", Field::iova},
};
static_assert(std::size(kNames) + 2 == static_cast<std::size_t>(Field::count),
              "every Field but unknown and ignored has its name");

// Keys of insert-trace's and insert-dp's records (docs/insert-trace.md, SPEC 7) that the
// correlator does not read, up to 14 characters (longer ones take the slow path).
constexpr std::string_view kIgnored[] = {
    "t_ns",         "ctx",        "send_cq",    "recv_cq",       "attr_mask",
    "from_state",   "path_mtu",   "pkey_index", "qkey",          "dlid",
    "is_global",    "peer_gid",   "sgid_index", "hop_limit",     "traffic_class",
    "timeout",      "retry_cnt",  "rnr_retry",  "min_rnr_timer", "max_rd_atomic",
    "access_flags", "lkey",       "send_flags", "num_sge",       "truncated",
    "cq",           "src_qp",     "wc_flags",   "index",         "polled",
    "inv",          "latency_ns", "transport",  "msgs",          "dup_pkts",
    "ooo_pkts",     "gaps",       "missing",    "lat_p50_ns",    "lat_p99_ns",
    "lat_max_ns",
};

}  // namespace

void FieldTable::add(std::string_view name, Field field) {
    if (find(name) != Field::unknown) std::abort();  // a name twice
    uint32_t slot = hash(name);
    while (slots_[slot].field != Field::unknown) slot = (slot + 1) & (kSlots - 1);
    slots_[slot] = {name, field};
    if (field != Field::ignored) names_[static_cast<std::size_t>(field)] = name;

    // The raw pattern: the name, its closing quote and the colon, in two words. A longer
    // ignored key is found by find() on the slow path; a longer read one is a bug.
    RawEntry raw;
    std::array<char, sizeof raw.word> text{};
    std::array<unsigned char, sizeof raw.mask> mask{};
    if (name.size() + 2 > text.size()) {
        if (field == Field::ignored) return;
        std::abort();
    }
    std::memcpy(text.data(), name.data(), name.size());
    text[name.size()] = '"';
    text[name.size() + 1] = ':';
    std::memset(mask.data(), 0xFF, name.size() + 2);
    std::memcpy(raw.word, text.data(), text.size());
    std::memcpy(raw.mask, mask.data(), mask.size());
    raw.field = field;
    raw.length = static_cast<uint8_t>(name.size());
    slot = raw_hash(text.data());
    while (raw_[slot].field != Field::unknown) slot = (slot + 1) & (kSlots - 1);
    raw_[slot] = raw;
}

FieldTable::FieldTable() {
    for (const auto& [name, field] : kNames) add(name, field);
    for (const std::string_view name : kIgnored) add(name, Field::ignored);
}

const FieldTable& field_table() {
    static const FieldTable table;
    return table;
}

}  // namespace insert::correlate
