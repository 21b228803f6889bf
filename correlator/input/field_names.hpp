// The JSON keys the correlator reads, looked up once per field of every input line. A
// record has ~25 fields and the ingest budget is ~1 us a record (issue 20: 1M records/s
// per core), so the lookup is a 256-slot open-addressing table on a cheap hash of the
// key's length and end characters, with one compare to confirm - not a std::map or a
// hash of the whole string.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace insert::correlate {

enum class Field : uint8_t {
    unknown,
    // Every record.
    type,
    // Dataplane msg / qp.
    src_ip,
    dst_ip,
    dst_qpn,
    src_qpn,
    op,
    imm,
    psn_first,
    psn_last,
    pkts,
    bytes,
    va,
    rkey,
    dma_len,
    t_first_ns,
    t_last_ns,
    t_ack_ns,
    retx_pkts,
    naks,
    rnr_naks,
    status,
    ip,
    qpn,
    peer_ip,
    peer_qpn,
    pair_by,
    cnps,
    ecn_ce,
    final,
    // insert-trace.
    verb,
    host,
    pid,
    tid,
    comm,
    cgroup,
    wall_ns,
    qp,
    mr,
    ret,
    qp_type,
    pd,
    state,
    dest_qpn,
    sq_psn,
    rq_psn,
    qp_access,
    addr,
    length,
    access,
    wr_id,
    opcode,
    signaled,
    len,
    remote_addr,
    chain_index,
    status_code,
    byte_len,
    ringbuf_drops,
    iova,
    count
};

class FieldTable {
  public:
    FieldTable();
    Field find(std::string_view key) const {
        if (key.empty()) return Field::unknown;
        for (uint32_t slot = hash(key);; slot = (slot + 1) & (kSlots - 1)) {
            const Entry& e = slots_[slot];
            if (e.field == Field::unknown) return Field::unknown;
            if (e.name == key) return e.field;
        }
    }

  private:
    static constexpr uint32_t kSlots = 256;  // > 4x the keys: probes are short
    struct Entry {
        std::string_view name;
        Field field = Field::unknown;
    };
    static uint32_t hash(std::string_view k) {
        return (static_cast<uint32_t>(k.size()) * 31u + static_cast<uint8_t>(k[0]) * 7u +
                static_cast<uint8_t>(k[k.size() - 1]) * 3u +
                static_cast<uint8_t>(k[k.size() / 2])) &
               (kSlots - 1);
    }
    std::array<Entry, kSlots> slots_{};
};

const FieldTable& field_table();

}  // namespace insert::correlate
