// The JSON keys the correlator reads, looked up once per field of every input line. A
// record has ~25 fields and the ingest budget is ~1 us a record (the target: 1M records/s
// per core), so the lookup is a 256-slot open-addressing table on a cheap hash of the
// key's length and end characters, with one compare to confirm - not a std::map or a
// hash of the whole string.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

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
    src_mac,
    ttl,
    port,
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
    // A key of the inputs' schemas that the correlator does not read (t_ns, ctx, ...):
    // skipped as quickly as a read one is found.
    ignored,
    count
};

class FieldTable {
  public:
    FieldTable();
    // The field named by the raw key at `k` (just past its opening quote; 16 bytes readable
    // there), matched with its closing quote and the colon after it as two 8-byte words, so
    // that neither the key's end nor the colon need be searched for: the common case.
    // Field::unknown when no name matches the key as it stands (an unknown key, one with an
    // escape, or whitespace before the colon: the caller then finds the key's end,
    // unescapes it if it must, and asks find()).
    Field find_raw(const char* k) const {
        const uint32_t slot = find_raw_slot(k);
        return slot == kNoSlot ? Field::unknown : raw_[slot].field;
    }
    // The same by slot of the raw table, so that a caller can guess the next key from the
    // previous one (producers write their keys in one order) and confirm the guess with one
    // compare: kNoSlot when no name matches.
    static constexpr uint32_t kSlots = 256;  // > 4x the keys: probes are short
    static constexpr uint32_t kNoSlot = kSlots;
    uint32_t find_raw_slot(const char* k) const {
        for (uint32_t slot = raw_hash(k);; slot = (slot + 1) & (kSlots - 1)) {
            const RawEntry& e = raw_[slot];
            if (e.field == Field::unknown) return kNoSlot;
            if (raw_slot_matches(slot, k)) return slot;
        }
    }
    bool raw_slot_matches(uint32_t slot, const char* k) const {
        const RawEntry& e = raw_[slot];
#if defined(__SSE4_1__)
        // One 16-byte compare: the scan's most frequent check, on its critical path.
        const __m128i differ =
            _mm_and_si128(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k)),
                                        _mm_load_si128(reinterpret_cast<const __m128i*>(e.word))),
                          _mm_load_si128(reinterpret_cast<const __m128i*>(e.mask)));
        return _mm_testz_si128(differ, differ) != 0;
#else
        uint64_t w[2];
        std::memcpy(w, k, sizeof w);
        return ((w[0] ^ e.word[0]) & e.mask[0]) == 0 && ((w[1] ^ e.word[1]) & e.mask[1]) == 0;
#endif
    }
    Field raw_field(uint32_t slot) const {
        return raw_[slot].field;
    }
    // The length of the key in a slot (ignored keys have no name() to tell it).
    std::size_t raw_length(uint32_t slot) const {
        return raw_[slot].length;
    }
    // A field's key, as the input spells it.
    std::string_view name(Field f) const {
        return names_[static_cast<std::size_t>(f)];
    }
    Field find(std::string_view key) const {
        if (key.empty()) return Field::unknown;
        for (uint32_t slot = hash(key);; slot = (slot + 1) & (kSlots - 1)) {
            const Entry& e = slots_[slot];
            if (e.field == Field::unknown) return Field::unknown;
            if (e.name == key) return e.field;
        }
    }

  private:
    void add(std::string_view name, Field field);
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
    // Names with their closing quote and a colon, as words and masks (names up to 14
    // characters), by a hash of the key's first three raw bytes.
    struct RawEntry {
        alignas(16) uint64_t word[2] = {};
        alignas(16) uint64_t mask[2] = {};
        Field field = Field::unknown;
        uint8_t length = 0;
    };
    static uint32_t raw_hash(const char* k) {
        return (static_cast<uint8_t>(k[0]) * 31u + static_cast<uint8_t>(k[1]) * 7u +
                static_cast<uint8_t>(k[2])) &
               (kSlots - 1);
    }
    std::array<RawEntry, kSlots> raw_{};
    std::array<std::string_view, static_cast<std::size_t>(Field::count)> names_{};
};

const FieldTable& field_table();

}  // namespace insert::correlate
