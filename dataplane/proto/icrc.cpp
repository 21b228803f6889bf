#include "dataplane/proto/icrc.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "dataplane/proto/ethernet.hpp"

namespace insert::proto {

// ---- CRC-32 ---------------------------------------------------------------------------
//
// The generator computes an ICRC for every frame it writes (a million frames of ~600 B for
// `large`), where zlib's crc32 was a fifth of all instructions. Two implementations, both
// the reflected CRC-32 with polynomial 0x04C11DB7 (zlib's, Ethernet's):
// - slicing-by-8 tables: 8 bytes per step, any CPU, and every tail shorter than 16 bytes;
// - carry-less multiplication (PCLMULQDQ, x86-64 since 2010): blocks of 64 bytes are
//   folded into four 128-bit remainders, then into one, which the tables finish (buffers
//   of 16-63 bytes are folded 16 bytes at a time).
// tests/dataplane/proto/icrc_test.cpp compares both with zlib on random buffers.

namespace {

constexpr uint32_t kPolyReflected = 0xEDB88320;  // 0x04C11DB7 with its bits reversed

struct CrcTables {
    uint32_t t[8][256];
};

// t[0] is the classic byte table; t[k][b] advances t[k-1][b] by one more zero byte, so one
// step can look up 8 input bytes independently and XOR the results.
constexpr CrcTables make_tables() {
    CrcTables tab{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = b;
        for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPolyReflected : 0);
        tab.t[0][b] = c;
    }
    for (int k = 1; k < 8; ++k)
        for (uint32_t b = 0; b < 256; ++b)
            tab.t[k][b] = (tab.t[k - 1][b] >> 8) ^ tab.t[0][tab.t[k - 1][b] & 0xFF];
    return tab;
}
constexpr CrcTables kTables = make_tables();

uint64_t load_le64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
    return v;
}

// `c` is the register (the complemented CRC), as in all the helpers below.
uint32_t crc_tables(uint32_t c, const uint8_t* p, std::size_t n) {
    const auto& t = kTables.t;
    for (; n >= 8; n -= 8, p += 8) {
        const uint64_t v = load_le64(p) ^ c;
        c = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^
            t[4][(v >> 24) & 0xFF] ^ t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^
            t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    }
    for (; n > 0; --n, ++p) c = t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__)

// x^k mod P, bit-reversed into the upper half of 64 bits: the operand that, multiplied
// (carry-less) with a bit-reversed 64-bit chunk, yields the chunk times x^(k+1) mod P
// aligned as a bit-reversed 128-bit value (the product of two reversed operands comes out
// reversed and one bit short, which the "+1" absorbs).
constexpr uint64_t fold_constant(unsigned k) {
    uint64_t r = 1;  // x^0, normal bit order (bit d = coefficient of x^d)
    for (unsigned i = 0; i < k; ++i) {
        r <<= 1;
        if (r & (uint64_t{1} << 32)) r ^= 0x104C11DB7ull;
    }
    uint64_t reversed = 0;
    for (unsigned d = 0; d < 32; ++d)
        if (r & (uint64_t{1} << d)) reversed |= uint64_t{1} << (63 - d);
    return reversed;
}

// Folding a 128-bit block forward by D bits: its low 64 bits hold the higher-degree half
// (reflected order), which moves by D + 64 bits, its high 64 bits move by D.
template <unsigned D>
constexpr std::array<uint64_t, 2> kFold = {fold_constant(D + 63), fold_constant(D - 1)};

__attribute__((target("pclmul,sse2"))) inline __m128i fold(__m128i x, __m128i k, __m128i next) {
    return _mm_xor_si128(
        _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("pclmul,sse2"))) uint32_t crc_clmul(uint32_t c, const uint8_t* p,
                                                          std::size_t n) {
    // From 16 bytes on: a frame's ICRC region without payload (an ACK: 52 bytes) costs
    // three folds instead of six 8-byte table steps.
    if (n < 16) return crc_tables(c, p, n);
    auto load = [](const uint8_t* q) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    };
    const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold<128>[1]),
                                        static_cast<long long>(kFold<128>[0]));
    // The register stands for the first 32 message bits: XOR it in and start from zero.
    __m128i x = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(c)));
    if (n >= 64) {
        const __m128i k512 = _mm_set_epi64x(static_cast<long long>(kFold<512>[1]),
                                            static_cast<long long>(kFold<512>[0]));
        __m128i x0 = x, x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
        p += 64;
        n -= 64;
        for (; n >= 64; n -= 64, p += 64) {
            x0 = fold(x0, k512, load(p));
            x1 = fold(x1, k512, load(p + 16));
            x2 = fold(x2, k512, load(p + 32));
            x3 = fold(x3, k512, load(p + 48));
        }
        x = fold(fold(fold(x0, k128, x1), k128, x2), k128, x3);
    } else {
        p += 16;
        n -= 16;
    }
    for (; n >= 16; n -= 16, p += 16) x = fold(x, k128, load(p));
    // x is congruent to everything folded so far: its 16 bytes, from a zero register, then
    // the tail, give the CRC of the whole.
    alignas(16) uint8_t rest[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(rest), x);
    return crc_tables(crc_tables(0, rest, sizeof(rest)), p, n);
}

// Whether the CPU has carry-less multiplication. Asked during static initialisation,
// which may run before libgcc's CPU probe.
bool cpu_has_pclmul() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul");
}

using CrcFn = uint32_t (*)(uint32_t, const uint8_t*, std::size_t);
const CrcFn kCrcImpl = cpu_has_pclmul() ? crc_clmul : crc_tables;  // chosen once

#else

constexpr auto kCrcImpl = crc_tables;

#endif

}  // namespace

uint32_t crc32_ieee(uint32_t crc, const uint8_t* data, std::size_t len) noexcept {
    return ~kCrcImpl(~crc, data, len);
}

uint32_t crc32_ieee_portable(uint32_t crc, const uint8_t* data, std::size_t len) noexcept {
    return ~crc_tables(~crc, data, len);
}

// ---- Combining CRCs -------------------------------------------------------------------
//
// Appending B (n bytes) to A turns A's register R into R * x^(8n) mod P, which is then
// XORed with the register B gives from zero; with the complements at both ends this is
// crc(A|B) = crc(A) * x^(8n) ^ crc(B) (zlib's crc32_combine). Values are in the reflected
// order: bit i of a 32-bit value is the coefficient of x^(31-i).

namespace {

// One zero byte through the register: times x^8 mod P.
uint32_t times_x8(uint32_t r) {
    return kTables.t[0][r & 0xFF] ^ (r >> 8);
}

// a * b mod P, one bit of `a` at a time (x^0 first, the top bit).
uint32_t multiply_portable(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (uint32_t bit = 0x80000000u; bit != 0; bit >>= 1) {
        if (a & bit) product ^= b;
        b = (b >> 1) ^ ((b & 1) ? kPolyReflected : 0);  // times x
    }
    return product;
}

#if defined(__x86_64__)
// a * b mod P with one carry-less multiplication: the 63-bit product of two reflected
// values, shifted left once, is the reflected 64-bit product (bit j: x^(63-j)). Its upper
// half holds x^0..x^31 as it stands; its lower half holds x^32..x^63, i.e. x^32 times a
// reflected 32-bit value, which four zero bytes through the register reduce.
__attribute__((target("pclmul,sse2"))) uint32_t multiply_clmul(uint32_t a, uint32_t b) {
    const __m128i product = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                                 _mm_cvtsi32_si128(static_cast<int>(b)), 0x00);
    const uint64_t r = static_cast<uint64_t>(_mm_cvtsi128_si64(product)) << 1;
    const auto low = static_cast<uint32_t>(r);
    const auto& t = kTables.t;
    // Four zero bytes at once: t[k] advances a byte by k + 1 bytes.
    return static_cast<uint32_t>(r >> 32) ^ t[3][low & 0xFF] ^ t[2][(low >> 8) & 0xFF] ^
           t[1][(low >> 16) & 0xFF] ^ t[0][low >> 24];
}

using MultiplyFn = uint32_t (*)(uint32_t, uint32_t);
const MultiplyFn kMultiply = cpu_has_pclmul() ? multiply_clmul : multiply_portable;
#else
constexpr auto kMultiply = multiply_portable;
#endif

}  // namespace

uint32_t crc32_length_factor(std::size_t len) noexcept {
    // x^(8 len) by squaring: `power` runs through x^8, x^16, x^32, ... (x^(8 * 2^k)).
    uint32_t factor = 0x80000000u;      // x^0
    uint32_t power = times_x8(factor);  // x^8
    for (; len != 0; len >>= 1) {
        if (len & 1) factor = multiply_portable(factor, power);
        power = multiply_portable(power, power);
    }
    return factor;
}

void crc32_length_factors(std::span<uint32_t> out) noexcept {
    uint32_t factor = 0x80000000u;  // x^0
    for (uint32_t& f : out) {
        f = factor;
        factor = times_x8(factor);
    }
}

uint32_t crc32_join(uint32_t crc_a, uint32_t crc_b, uint32_t factor) noexcept {
    return kMultiply(factor, crc_a) ^ crc_b;
}

uint32_t crc32_join_portable(uint32_t crc_a, uint32_t crc_b, uint32_t factor) noexcept {
    return multiply_portable(factor, crc_a) ^ crc_b;
}

// ---- ICRC -----------------------------------------------------------------------------

uint32_t compute_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept {
    // The masked headers are copied into a buffer (8 bytes of 0xFF for the LRH, the IP
    // header - IPv4 with options at most 60 bytes - UDP and BTH), so that the CRC runs over
    // few contiguous pieces. IPv6 extension headers are invariant and fed from the frame.
    constexpr std::size_t kMaxFixedIp = 60;
    const uint8_t* f = frame.data();
    const std::size_t ip_len = p.l4_offset - p.l3_offset;
    const std::size_t fixed_ip = p.ipv6 ? kIpv6HeaderLen : ip_len;
    if (fixed_ip > kMaxFixedIp || ip_len < fixed_ip) return 0;  // not a parse of `frame`
    uint8_t head[8 + kMaxFixedIp + kUdpHeaderLen + kBthLen];
    std::memset(head, 0xFF, 8);
    uint8_t* h = head + 8;
    std::memcpy(h, f + p.l3_offset, fixed_ip);
    if (p.ipv6) {
        h[0] |= 0x0F;               // traffic class: low nibble of byte 0...
        h[1] = h[2] = h[3] = 0xFF;  // ...high nibble of byte 1, then the flow label
        h[7] = 0xFF;                // hop limit
    } else {
        h[1] = 0xFF;           // TOS
        h[8] = 0xFF;           // TTL
        h[10] = h[11] = 0xFF;  // header checksum
    }
    h += fixed_ip;
    uint32_t crc = 0;
    if (ip_len > fixed_ip) {
        crc = crc32_ieee(crc, head, static_cast<std::size_t>(h - head));
        crc = crc32_ieee(crc, f + p.l3_offset + fixed_ip, ip_len - fixed_ip);
        h = head;
    }
    std::memcpy(h, f + p.l4_offset, kUdpHeaderLen);
    h[6] = h[7] = 0xFF;  // UDP checksum
    h += kUdpHeaderLen;
    std::memcpy(h, f + p.bth_offset, kBthLen);
    h[4] = 0xFF;  // FECN, BECN, resv6
    h += kBthLen;
    crc = crc32_ieee(crc, head, static_cast<std::size_t>(h - head));
    const std::size_t rest_from = p.bth_offset + kBthLen;
    return crc32_ieee(crc, f + rest_from, p.icrc_offset - rest_from);
}

uint32_t wire_icrc(std::span<const uint8_t> frame, const ParsedPacket& p) noexcept {
    const uint8_t* q = frame.data() + p.icrc_offset;
    return uint32_t{q[0]} | (uint32_t{q[1]} << 8) | (uint32_t{q[2]} << 16) | (uint32_t{q[3]} << 24);
}

}  // namespace insert::proto
