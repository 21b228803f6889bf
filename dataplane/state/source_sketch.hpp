// The distinct source IPs of an event window (docs/semantics.md "Events"), in 162 bytes
// that travel inside the event record: exact up to kExactMax sources, a HyperLogLog
// estimate above. Two sketches of disjoint or overlapping source sets merge into the
// sketch of their union, equal to the one a single engine would have built from every
// source, whatever the split and the order: the exporter merges the windows of a
// destination that several workers saw (sharding splits its sources), and the counts are
// the same for any worker count (SPEC invariant 1).
//
// Why this form: a spray of spoofed sources to one QP makes one record a second, whose
// `sources` must tell 3 senders from 200,000 without memory that grows with them. The
// exact list is 64-bit hashes of the addresses (two of 20 sources collide with probability
// below 1e-17); the estimate has 256 five-bit registers, a relative standard error of
// 1.04 / sqrt(256) = 6.5% (the bound the tests check and the docs state is 20%, three
// standard errors), with no saturation below 2^30 sources.
#pragma once

#include <array>
#include <cstdint>

#include "dataplane/proto/ip_address.hpp"

namespace insert::state {

class SourceSketch {
  public:
    static constexpr uint32_t kExactMax = 20;  // hashes kept exactly (160 bytes of 8)
    static constexpr uint32_t kRegisters = 256;
    static constexpr uint32_t kRegisterBits = 5;
    static constexpr std::size_t kBytes = kRegisters * kRegisterBits / 8;  // 160
    static_assert(kExactMax * sizeof(uint64_t) == kBytes);

    // The hash a source IP is counted by (the same in every engine and the exporter).
    static uint64_t hash(const proto::IpAddress& source);

    void add(uint64_t source_hash);
    void merge(const SourceSketch& other);
    // Distinct sources: exact while exact(), else the estimate, rounded.
    uint64_t count() const;
    bool exact() const { return !estimating_; }

  private:
    uint64_t exact_hash(uint32_t i) const;
    uint32_t reg(uint32_t j) const;
    void set_reg(uint32_t j, uint32_t value);
    void add_to_registers(uint64_t h);
    // Turns the exact list into registers (the list's bytes become the registers').
    void start_estimating();

    // Exact: exact_count_ hashes of 8 bytes each. Estimating: kRegisters 5-bit registers.
    std::array<uint8_t, kBytes> bytes_{};
    uint8_t exact_count_ = 0;
    bool estimating_ = false;
};
static_assert(sizeof(SourceSketch) == SourceSketch::kBytes + 2, "travels in every event record");

}  // namespace insert::state
