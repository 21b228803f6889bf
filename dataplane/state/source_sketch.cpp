#include "dataplane/state/source_sketch.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "dataplane/state/endpoint_key.hpp"

namespace insert::state {

namespace {

// A seed of its own: the sketch's bits must not follow any table's slot order.
constexpr uint64_t kSourceSeed = 0x243F6A8885A308D3ull;
constexpr uint32_t kIndexBits = 8;  // log2(kRegisters)
constexpr uint32_t kMaxRank = (1u << SourceSketch::kRegisterBits) - 1;
static_assert(1u << kIndexBits == SourceSketch::kRegisters);

}  // namespace

uint64_t SourceSketch::hash(const proto::IpAddress& source) {
    return hash_ip(source, kSourceSeed);
}

uint64_t SourceSketch::exact_hash(uint32_t i) const {
    uint64_t h;
    std::memcpy(&h, bytes_.data() + i * sizeof h, sizeof h);
    return h;
}

// Register j holds bits [5j, 5j + 5) of the bytes, least significant first.
uint32_t SourceSketch::reg(uint32_t j) const {
    const uint32_t bit = j * kRegisterBits;
    const uint32_t at = bit / 8, shift = bit % 8;
    uint32_t v = bytes_[at];
    if (shift + kRegisterBits > 8) v |= uint32_t{bytes_[at + 1]} << 8;
    return (v >> shift) & kMaxRank;
}

void SourceSketch::set_reg(uint32_t j, uint32_t value) {
    const uint32_t bit = j * kRegisterBits;
    const uint32_t at = bit / 8, shift = bit % 8;
    const uint32_t mask = kMaxRank << shift, v = value << shift;
    bytes_[at] = static_cast<uint8_t>((bytes_[at] & ~mask) | (v & 0xFF));
    if (shift + kRegisterBits > 8)
        bytes_[at + 1] = static_cast<uint8_t>((bytes_[at + 1] & ~(mask >> 8)) | (v >> 8));
}

// HyperLogLog: the top bits pick the register, which keeps the longest run of leading
// zeros (plus one) seen in the rest.
void SourceSketch::add_to_registers(uint64_t h) {
    const uint32_t j = static_cast<uint32_t>(h >> (64 - kIndexBits));
    const uint64_t rest = h << kIndexBits;
    const uint32_t rank =
        rest == 0 ? kMaxRank
                  : std::min<uint32_t>(static_cast<uint32_t>(std::countl_zero(rest)) + 1, kMaxRank);
    if (rank > reg(j)) set_reg(j, rank);
}

void SourceSketch::start_estimating() {
    uint64_t hashes[kExactMax];
    for (uint32_t i = 0; i < exact_count_; ++i) hashes[i] = exact_hash(i);
    const uint32_t n = exact_count_;
    bytes_.fill(0);
    exact_count_ = 0;
    estimating_ = true;
    for (uint32_t i = 0; i < n; ++i) add_to_registers(hashes[i]);
}

void SourceSketch::add(uint64_t h) {
    if (estimating_) {
        add_to_registers(h);
        return;
    }
    for (uint32_t i = 0; i < exact_count_; ++i)
        if (exact_hash(i) == h) return;
    if (exact_count_ < kExactMax) {
        std::memcpy(bytes_.data() + exact_count_ * sizeof h, &h, sizeof h);
        ++exact_count_;
        return;
    }
    start_estimating();
    add_to_registers(h);
}

void SourceSketch::merge(const SourceSketch& other) {
    if (!other.estimating_) {
        for (uint32_t i = 0; i < other.exact_count_; ++i) add(other.exact_hash(i));
        return;
    }
    if (!estimating_) start_estimating();
    for (uint32_t j = 0; j < kRegisters; ++j)
        if (other.reg(j) > reg(j)) set_reg(j, other.reg(j));
}

uint64_t SourceSketch::count() const {
    if (!estimating_) return exact_count_;
    constexpr double m = kRegisters;
    double inverse_sum = 0;
    uint32_t zeros = 0;
    for (uint32_t j = 0; j < kRegisters; ++j) {
        const uint32_t r = reg(j);
        inverse_sum += std::ldexp(1.0, -static_cast<int>(r));
        zeros += r == 0;
    }
    const double alpha = 0.7213 / (1 + 1.079 / m);
    double estimate = alpha * m * m / inverse_sum;
    // Few sources for the registers: counting the empty ones (linear counting) is the
    // better estimate there.
    if (estimate <= 2.5 * m && zeros > 0) estimate = m * std::log(m / zeros);
    return static_cast<uint64_t>(std::llround(estimate));
}

}  // namespace insert::state
